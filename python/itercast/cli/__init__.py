"""The ``itercast`` command line: one module per subcommand, each with ``register``."""

from __future__ import annotations

import argparse
import importlib
import sys

from itercast.cli.version import VersionAction
from itercast.errors import ItercastError

# Subcommand modules under itercast.cli; each defines register(subparsers),
# which adds its parser and sets ``run`` (args -> exit code) as a default.
COMMANDS = ("scan", "ops", "collect", "train", "predict", "evaluate", "watch", "serve", "sim", "autosched", "experiment", "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="itercast",
        description="Predict training iteration times from PyTorch profiler traces.",
    )
    parser.add_argument("--version", action=VersionAction,
                        help="print the version, the native module's build (compiler, flags) and its SIMD level")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"itercast.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except ItercastError as error:
        print(f"itercast {args.command}: {error}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as error:
        print(f"itercast {args.command}: {error}", file=sys.stderr)
        return 1
