"""Options every subcommand spells the same way, and the old spellings that still work for one release.

The vocabulary: a collection is ``--dataset DIR``; a predictions file is ``--predictions CSV``, written or
read; a list option takes comma-separated items and may be repeated (``--models a,b --models c``), except
where an item may itself hold a comma (files, ``--set KEY=VALUE``): those are repeated only; a time option
says its unit; ``--workers 0`` means one process per CPU.
"""

from __future__ import annotations

import argparse
import logging
import sys

REMOVAL = "will be removed in the next release"
WORKERS_HELP = "processes that run {what}; 1: in this process; 0 (the default): one per CPU"
LIST_HELP = "comma-separated; the option may be repeated"


def warn_deprecated(prog: str, old: str, new: str) -> None:
    print(f"{prog}: warning: {old} is deprecated and {REMOVAL}; use {new}", file=sys.stderr)


class _DeprecatedSpelling(argparse.Action):
    """An old option name: warns once, then does what the new spelling does."""

    def __init__(self, option_strings, dest, replacement: argparse.Action, **kwargs):
        super().__init__(option_strings, dest, nargs=replacement.nargs, type=replacement.type,
                         choices=replacement.choices, metavar=replacement.metavar,
                         default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        self.replacement = replacement
        self.warned = False

    def __call__(self, parser, namespace, values, option_string=None):
        if not self.warned:
            warn_deprecated(parser.prog, option_string, self.replacement.option_strings[-1])
            self.warned = True
        self.replacement(parser, namespace, values, self.replacement.option_strings[-1])


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: argparse.Action) -> None:
    """``old`` keeps working as ``new`` (the action add_argument returned), with a warning."""
    parser.add_argument(old, dest=new.dest, action=_DeprecatedSpelling, replacement=new)


class _ListAction(argparse.Action):
    """Comma-separated items, accumulated over repeats of the option; with ``space_separated``, the old
    ``--models a b`` form is also read, with a warning."""

    def __init__(self, option_strings, dest, item_type=str, item_choices=None, space_separated=False,
                 **kwargs):
        super().__init__(option_strings, dest, nargs="+" if space_separated else None, **kwargs)
        self.item_type, self.item_choices = item_type, item_choices
        self.warned = False

    def __call__(self, parser, namespace, values, option_string=None):
        tokens = values if isinstance(values, list) else [values]
        if len(tokens) > 1 and not self.warned:
            warn_deprecated(parser.prog, f"{option_string} {' '.join(tokens)}", f"{option_string} {','.join(tokens)}")
            self.warned = True
        items = [self._item(parser, option_string, text) for text in _split(tokens)]
        current = getattr(namespace, self.dest, None)
        earlier = [] if current is None or current is self.default else list(current)
        setattr(namespace, self.dest, earlier + items)

    def _item(self, parser, option_string, text):
        try:
            item = self.item_type(text)
        except ValueError:
            parser.error(f"argument {option_string}: invalid value: {text!r}")
        if self.item_choices is not None and item not in self.item_choices:
            parser.error(f"argument {option_string}: invalid choice: {text!r} "
                         f"(choose from {', '.join(map(str, self.item_choices))})")
        return item


def _split(tokens) -> list[str]:
    return [item.strip() for token in tokens for item in token.split(",") if item.strip()]


def add_list_option(parser: argparse.ArgumentParser, *flags: str, help: str, item_type=str, choices=None,
                    space_separated: bool = False, **kwargs) -> argparse.Action:
    """A list option: ``--flag a,b``, repeatable; ``choices`` checked item by item as the line is parsed."""
    return parser.add_argument(*flags, action=_ListAction, item_type=item_type, item_choices=choices,
                               space_separated=space_separated, help=f"{help} ({LIST_HELP})", **kwargs)


def add_dataset_option(parser: argparse.ArgumentParser, help: str, required: bool = True,
                       legacy_positional: bool = False) -> argparse.Action:
    """``--dataset DIR``; with ``legacy_positional``, a bare argument is also read as it, with a warning."""
    parser.set_defaults(dataset_required=required, dataset_positional=legacy_positional)
    return parser.add_argument("--dataset", metavar="DIR", help=help)


def take_positional_dataset(args: argparse.Namespace, extras: list[str]) -> list[str]:
    """Fills ``args.dataset`` from an old positional dataset where the subcommand took one; returns the
    arguments still not recognised. Done after parsing, so that the bare argument may come anywhere on
    the line, as it could when it was a positional."""
    bare = [text for text in extras if not text.startswith("-")]
    if getattr(args, "dataset_positional", False) and args.dataset is None and len(bare) == 1:
        warn_deprecated(f"itercast {args.command}", "the dataset as a positional argument",
                        f"--dataset {bare[0]}")
        args.dataset = bare[0]
        extras = [text for text in extras if text is not bare[0]]
    return extras


def require_dataset(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Checked here rather than by argparse, which would refuse the old positional form."""
    if getattr(args, "dataset_required", False) and args.dataset is None:
        parser.error(f"{args.command}: the following arguments are required: --dataset")


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def add_workers_option(parser: argparse.ArgumentParser, what: str) -> argparse.Action:
    return parser.add_argument("--workers", type=non_negative_int, default=0, metavar="N",
                               help=WORKERS_HELP.format(what=what))


def workers_count(workers: int) -> int | None:
    """The process count ``--workers`` asks for; None: one per CPU."""
    return workers or None


def add_verbosity_options(parser: argparse.ArgumentParser, subcommand: bool = False) -> None:
    """``-v/--verbose`` and ``-q/--quiet``, counted. After a subcommand they are stored only when given,
    so that they do not hide the same flags given before it."""
    default = argparse.SUPPRESS if subcommand else 0
    parser.add_argument("-v", "--verbose", action="count", default=default,
                        help="more of the library's progress messages on stderr (debug details)")
    parser.add_argument("-q", "--quiet", action="count", default=default,
                        help="no progress messages on stderr: warnings and errors only (-qq: errors only)")


class _StderrHandler(logging.StreamHandler):
    """Writes to ``sys.stderr`` as it is when a record comes, not as it was when the CLI started."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _):
        pass


class _Discard:
    """A text stream that keeps nothing and never closes (a progress bar may write as it is collected)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def progress_stream(quiet: int):
    """Where a progress bar goes: nowhere under -q; None: the bar's own default (stderr)."""
    return _Discard() if quiet else None


LOG_LEVELS = {-2: logging.ERROR, -1: logging.WARNING, 0: logging.INFO, 1: logging.DEBUG}
_handler: logging.Handler | None = None


def configure_logging(verbose: int, quiet: int) -> None:
    """The itercast loggers report to stderr at the level -v/-q ask for (default: progress messages)."""
    global _handler
    logger = logging.getLogger("itercast")
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = _StderrHandler()
    _handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(LOG_LEVELS[max(-2, min(1, verbose - quiet))])


def stamp_log_lines() -> None:
    """Log lines with their time, for a long-running command (serve)."""
    if _handler is not None:
        _handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
