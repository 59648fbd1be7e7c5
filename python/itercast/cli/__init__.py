"""The ``itercast`` command line: one module per subcommand, each with ``register``."""

from __future__ import annotations

import argparse
import importlib
import sys

from itercast.cli import options
from itercast.cli.version import VersionAction
from itercast.errors import ItercastError

USAGE_ERROR = 2  # argparse's exit status for a bad command line
# Subcommand modules under itercast.cli; each defines register(subparsers),
# which adds its parser and sets ``run`` (args -> exit code) as a default.
COMMANDS = ("scan", "ops", "collect", "train", "predict", "evaluate", "watch", "serve", "sim", "autosched", "experiment", "demo", "workload")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="itercast",
        description="Predict training iteration times from PyTorch profiler traces.",
    )
    parser.add_argument("--version", action=VersionAction,
                        help="print the version, the native module's build (compiler, flags) and its SIMD level")
    options.add_verbosity_options(parser)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"itercast.cli.{name}").register(subparsers)
    for subparser in _subcommand_parsers(parser):
        options.add_verbosity_options(subparser, subcommand=True)
    return parser


def _subcommand_parsers(parser: argparse.ArgumentParser):
    """Every parser under ``parser``'s subcommands, nested ones (experiment's) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                yield subparser
                yield from _subcommand_parsers(subparser)


def parse(argv: list[str] | None = None):
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    extras = options.take_positional_dataset(args, extras)
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    options.require_dataset(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(argv)
    except SystemExit as stop:
        if stop.code == USAGE_ERROR:  # argparse has printed why
            return USAGE_ERROR
        raise
    options.configure_logging(args.verbose, args.quiet)
    try:
        return int(args.run(args) or 0)
    except ItercastError as error:
        print(f"itercast {args.command}: {error}", file=sys.stderr)
        return getattr(error, "exit_code", 2)
    except (OSError, ValueError) as error:
        print(f"itercast {args.command}: {error}", file=sys.stderr)
        return 1
