"""The pgknee command. Parses arguments, calls the layers, prints. One place
turns every PgkneeError into one line and an exit code."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from typing import Any, NoReturn

from pgknee import __version__
from pgknee.errors import PgkneeError, UserError


def build_parser() -> argparse.ArgumentParser:
    from pgknee.cli import cleanup as cleanup_cmd
    from pgknee.cli import compare as compare_cmd
    from pgknee.cli import recommend as recommend_cmd
    from pgknee.cli import report as report_cmd
    from pgknee.cli import run as run_cmd
    from pgknee.cli import show as show_cmd

    p = _Parser(
        prog="pgknee",
        description="PostgreSQL connection-concurrency lab: sweep the number of client connections, "
                    "measure throughput, latency and wait events, and show where the knee is.")
    p.add_argument("--version", action="version", version=f"pgknee {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    run_cmd.add_parser(sub)
    show_cmd.add_parsers(sub)
    compare_cmd.add_parser(sub)
    recommend_cmd.add_parsers(sub)
    report_cmd.add_parser(sub)
    cleanup_cmd.add_parser(sub)
    return p


class _Parser(argparse.ArgumentParser):
    """Argument errors become one line and exit code 2, like every other bad input. No
    abbreviated options: '--ds URL' would pass for '--dsn' and escape its redaction."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{self.prog}: {message}", f"see '{self.prog} --help'")


def main(argv: list[str] | None = None) -> int:
    # psycopg logs warnings (a cancel that timed out, ...) that Python would print one per
    # line: pgknee reports what matters itself
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    logging.getLogger("psycopg").propagate = False
    try:
        args = build_parser().parse_args(argv)
        if args.command != "cleanup":
            _sweep_quietly()
        return int(args.func(args) or 0)
    except PgkneeError as e:
        print(f"pgknee: error: {e.one_line()}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("pgknee: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("PGKNEE_DEBUG"):
            traceback.print_exc()
        print(f"pgknee: internal error: {type(e).__name__}: {e} (set PGKNEE_DEBUG=1 for the traceback "
              "and please report it)", file=sys.stderr)
        return 1
    finally:
        from pgknee import registry

        registry.close()  # everything this command started is stopped by now: its watchdog may go


def _sweep_quietly() -> None:
    """What pgknee processes that died left behind is cleaned up before anything else; a line
    each on standard error, so that nothing vanishes unseen."""
    from pgknee import registry

    for line in registry.sweep():
        print(f"pgknee: cleaned up after a pgknee that died: {line}", file=sys.stderr)
