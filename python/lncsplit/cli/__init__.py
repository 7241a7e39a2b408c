"""The ``lncsplit`` command line (contract §5).

One module per command in this package, each exposing
``add_parser(subparsers)`` (which registers the command and sets
``run`` as its default) and ``run(args) -> int`` (the exit code). Adding a
command is one file and one line in :data:`COMMANDS`. Shared helpers — exit
codes, argument types, error formatting, progress, the bulk run over
:func:`lncsplit.corpus.runner.run_units` — are in :mod:`lncsplit.cli._common`.

Exit codes: 0 every input succeeded, 1 some input failed (the others are
still processed) or none was found, 2 usage error, 130 interrupted. Heavy
modules are imported inside each command's ``run``, so ``lncsplit --help``
stays fast. Defaults and decisions are documented in docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from lncsplit.cli import (
    diff,
    explain,
    gen,
    info,
    link,
    lower,
    memory,
    racecheck,
    report,
    sim,
    split,
    unlink,
    verify,
)
from lncsplit.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    describe_error,
    err,
    interrupted,
)
from lncsplit.errors import LncsplitError

#: Every command, in ``--help`` order.
COMMANDS: list[ModuleType] = [
    split,
    verify,
    info,
    gen,
    memory,
    sim,
    explain,
    diff,
    report,
    lower,
    link,
    unlink,
    racecheck,
]


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every command."""
    p = argparse.ArgumentParser(
        prog="lncsplit",
        description="Split Neuron BIR-JSON modules across logical NeuronCores (LNC).",
    )
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0, 1, 2 or 130)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if args.version:
        from lncsplit._core import __version__

        print(f"lncsplit {__version__}")
        return EXIT_OK
    if args.command is None:
        parser.print_usage(sys.stderr)
        names = ", ".join(m.__name__.rsplit(".", 1)[-1] for m in COMMANDS)
        err(f"a command is required ({names})")
        return EXIT_USAGE
    if getattr(args, "fsync", False):
        from lncsplit._atomic import set_durable

        set_durable(True)  # before any worker starts: they inherit it
    try:
        status: int = args.run(args)
    except UsageError as e:
        err(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        return interrupted(args, e)
    except BrokenPipeError:
        return EXIT_FAILED
    except (OSError, LncsplitError) as e:
        # No traceback for what the environment or an input did (contract §6):
        # one line naming it; the commands report per-input errors themselves.
        err(describe_error(e))
        return EXIT_FAILED
    return status


__all__ = ["COMMANDS", "build_parser", "main"]
