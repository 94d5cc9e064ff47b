"""The pgknee command. Parses arguments, calls the layers, prints. One place
turns every PgkneeError into one line and an exit code."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any, NoReturn

from pgknee.base.errors import (
    BROKEN_PIPE,
    Interrupted,
    UserError,
    debug,
    from_exception,
    record_thread_failure,
    take_thread_failures,
    thread_error,
)
from pgknee.system import proc


class _Version(argparse.Action):
    """--version, read only when asked (a checkout's commit comes from its files)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:  # noqa: A002
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from pgknee.cli.version import describe

        print(describe())
        parser.exit()


READS = (0, 1, 2, 5, 7, 130, 141)  # a command that reads the store
# the exit codes each command can give (errors.EXIT_CODES says what each means)
COMMAND_CODES: dict[str, tuple[int, ...]] = {
    "run": (0, 1, 2, 3, 4, 5, 6, 7, 8, 130, 141), "scenarios": (0, 1, 141), "runs": READS, "show": READS,
    "waits": READS, "compare": (*READS, 9), "recommend": (*READS, 10), "size": READS, "report": READS,
    "export": READS, "cleanup": (0, 1, 2, 3, 130), "doctor": (0, 1, 141), "store import": (*READS, 8),
    "store upgrade": READS, "store copy": (*READS, 3, 8), "agent": (0, 1, 2, 3, 4, 5, 7, 130),
    "k8s render": (0, 1, 2, 141), "completion": (0, 1, 2, 141), "workload capture": (0, 1, 2, 3, 130),
    "workload show": (0, 1, 2, 141), "workload mix": READS}


def exit_codes_epilog(command: str) -> str:
    from pgknee.base.errors import EXIT_CODES

    return "Exit codes: " + "; ".join(f"{c} {EXIT_CODES[c]}" for c in sorted(COMMAND_CODES[command])) + "."


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
             ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command that runs ('run', 'store copy', ...) with its parser, in the parser's order:
    the one walk the help's exit codes, the command reference and the help's tests use."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs and path:
        yield " ".join(path), parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from commands(sub, (*path, name))


def _with_exit_codes(parser: argparse.ArgumentParser) -> None:
    """Each command's epilog ends with its exit codes (from one table: COMMAND_CODES)."""
    for name, sub in commands(parser):
        given = (sub.epilog or "").split("Exit codes:")[0].strip()
        sub.epilog = (given + "\n\n" if given else "") + exit_codes_epilog(name)


def build_parser() -> argparse.ArgumentParser:
    from pgknee.cli import agent as agent_cmd
    from pgknee.cli import cleanup as cleanup_cmd
    from pgknee.cli import compare as compare_cmd
    from pgknee.cli import completion as completion_cmd
    from pgknee.cli import doctor as doctor_cmd
    from pgknee.cli import export as export_cmd
    from pgknee.cli import k8s as k8s_cmd
    from pgknee.cli import recommend as recommend_cmd
    from pgknee.cli import report as report_cmd
    from pgknee.cli import run as run_cmd
    from pgknee.cli import show as show_cmd
    from pgknee.cli import store as store_cmd
    from pgknee.cli import workload as workload_cmd

    p = _Parser(
        prog="pgknee",
        description="PostgreSQL connection-concurrency lab: sweep the number of client connections, "
                    "measure throughput, latency and wait events, and show where the knee is.")
    p.add_argument("--version", action=_Version, help="show pgknee's version (and its commit, from a checkout)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    run_cmd.add_parser(sub)
    show_cmd.add_parsers(sub)
    compare_cmd.add_parser(sub)
    recommend_cmd.add_parsers(sub)
    report_cmd.add_parser(sub)
    export_cmd.add_parser(sub)
    cleanup_cmd.add_parser(sub)
    store_cmd.add_parser(sub)
    agent_cmd.add_parser(sub)
    k8s_cmd.add_parser(sub)
    completion_cmd.add_parser(sub)
    doctor_cmd.add_parser(sub)
    workload_cmd.add_parser(sub)
    _with_exit_codes(p)
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
    """Every way a command ends is one line (or none) and an exit code (errors.py lists them):
    a PgkneeError, an exception of the standard library or a driver that a user can meet (mapped
    by errors.from_exception), an exception in one of pgknee's threads (recorded by the hook
    below, reported here once), Ctrl-C, a broken pipe (quietly, 141)."""
    # psycopg logs warnings (a cancel that timed out, ...) that Python would print one per
    # line: pgknee reports what matters itself
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    logging.getLogger("psycopg").propagate = False
    previous_hook, threading.excepthook = threading.excepthook, _thread_failed
    args: argparse.Namespace | None = None
    try:
        try:
            parser = build_parser()
            if "_ARGCOMPLETE" in os.environ:  # a shell asks for completions (pgknee completion SHELL)
                from pgknee.cli.completion import complete

                complete(parser)
            args = parser.parse_args(argv)
            if args.command != "cleanup":
                _sweep_quietly()
            with proc.ctrl_c_remembered():
                code = int(args.func(args) or 0)
                proc.check_ctrl_c()  # one that came, though an import swallowed its exception
            return _threads_failed(code)
        except (Exception, KeyboardInterrupt) as e:
            return _failed(e, args)
        finally:
            from pgknee.system import registry

            registry.close()  # everything this command started is stopped by now: its watchdog may go
    except KeyboardInterrupt:  # a second Ctrl-C, while reporting or closing
        return Interrupted.exit_code
    except BrokenPipeError:
        return _broken_pipe()
    finally:
        threading.excepthook = previous_hook


def _failed(e: BaseException, args: argparse.Namespace | None) -> int:
    """The one line of a command that failed (and of the threads that failed beside it)."""
    if isinstance(e, BrokenPipeError):
        return _broken_pipe()
    if isinstance(e, KeyboardInterrupt):
        return _say("pgknee: interrupted", Interrupted.exit_code)
    err = from_exception(e, store=_store_label(getattr(args, "store", None)))
    plan = getattr(args, "plan", None)
    if isinstance(e, UnicodeDecodeError) and plan:  # the plan file is the one file read without a check
        err = UserError(f"the plan {plan} is not UTF-8 text ({e.reason} at byte {e.start})", "save it as UTF-8")
    if err is None:  # a bug: still one line, unless asked for the traceback
        if debug():
            traceback.print_exc()
        return _say(f"pgknee: internal error: {type(e).__name__}: {e} (set PGKNEE_DEBUG=1 for the traceback "
                    "and please report it)", 1)
    code = _say(f"pgknee: error: {err.one_line()}", err.exit_code)
    for name, exc in take_thread_failures():
        _say(f"pgknee: error: {thread_error(name, exc).one_line()}", code)
    return code


def _threads_failed(code: int) -> int:
    """A command that ended well, but a thread of its failed: the failure is the command's."""
    failures = take_thread_failures()
    if not failures:
        return code
    err = thread_error(*failures[0])
    more = f" (and {len(failures) - 1} more thread error(s))" if len(failures) > 1 else ""
    return _say(f"pgknee: error: {err.one_line()}{more}", err.exit_code)


def _thread_failed(hook: threading.ExceptHookArgs) -> None:
    """threading.excepthook: a thread's exception is recorded for the main thread to report, not
    printed as a traceback from the thread (unless PGKNEE_DEBUG asks for it)."""
    if hook.exc_type is SystemExit or hook.exc_value is None:
        return
    if debug():
        threading.__excepthook__(hook)
    record_thread_failure(hook.thread.name if hook.thread is not None else "unnamed", hook.exc_value)


def _say(line: str, code: int) -> int:
    try:
        print(line, file=sys.stderr, flush=True)
    except BrokenPipeError:
        return _broken_pipe()
    except (OSError, ValueError):  # standard error closed: the exit code says it
        pass
    return code


def _broken_pipe() -> int:
    """Whoever read standard output (or standard error) has gone (pgknee runs | head -1): exit
    quietly with 141, as a shell reports SIGPIPE. Standard output is pointed at /dev/null, so that
    Python's last flush at exit has nowhere to fail ('Exception ignored ... BrokenPipeError')."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return BROKEN_PIPE


def _sweep_quietly() -> None:
    """What pgknee processes that died left behind is cleaned up before anything else; a line
    each on standard error, so that nothing vanishes unseen."""
    from pgknee.system import registry

    for line in registry.sweep():
        print(f"pgknee: cleaned up after a pgknee that died: {line}", file=sys.stderr)


def _store_label(store: object) -> str | None:
    """The store as an error line names it: a PostgreSQL store's DSN without its password."""
    from pgknee.store.location import locate

    return None if store is None else locate(str(store)).label
