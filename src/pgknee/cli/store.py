"""pgknee store: the collector database itself. `import FILE` loads a side file back (a step's
results, and how its run ended, that the store could not take when pgknee wrote them: the
error line named the file); `upgrade` brings a store written by an older pgknee to this one's
format in place (the read commands read an older store through an upgraded copy of their own,
each time, and never change it)."""

from __future__ import annotations

import argparse
from typing import Any

from pgknee.base.errors import StoreError
from pgknee.cli.common import add_store


def add_parser(sub: Any) -> None:
    p = sub.add_parser("store", help="the collector database: load a side file back, upgrade its format",
                       description="Act on the collector database itself.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    i = actions.add_parser("import", help="load a side file (what the store could not take when pgknee wrote it) "
                                          "into the store",
                           description="Load a side file into the store: the step's results it holds (into the "
                                       "step's row), and how the run ended when the store could not take that "
                                       "either. Files that pgknee wrote when writing the store failed; the error "
                                       "line named them.")
    i.add_argument("file", metavar="FILE", help="the side file (NAME.RUN_ID.step-SEQ.json or NAME.RUN_ID.end.json)")
    i.add_argument("--store", metavar="PATH", help="the store to load it into (default: the one the side file names)")
    i.set_defaults(func=cmd_import)
    u = actions.add_parser("upgrade", help="bring a store written by an older pgknee to this one's format",
                           description="Migrate the store in place to this pgknee's format (writing commands do "
                                       "it too; read commands read an older store through a copy and never change "
                                       "it).")
    add_store(u)
    u.set_defaults(func=cmd_upgrade)
    c = actions.add_parser("copy", help="copy runs from one store to another (SQLite or PostgreSQL, either way)",
                           description="Copy runs, with every row they have, from SRC to DST: SQLite files and "
                                       "PostgreSQL databases (postgresql://user@host/db) either way. SRC is only "
                                       "read; each run lands in DST in one transaction. A password goes in "
                                       "~/.pgpass, or DST may be 'env' for the DSN in $PGKNEE_STORE_DSN.")
    c.add_argument("src", metavar="SRC", help="the store to read (a file, a DSN, or 'env': $PGKNEE_STORE_DSN)")
    c.add_argument("dst", metavar="DST", help="the store to write (made if new; a file, a DSN, or 'env')")
    c.add_argument("runs", metavar="RUN", nargs="*", help="the runs to copy (ids, unique prefixes, 'last'); "
                                                           "default: all")
    c.add_argument("--skip-existing", action="store_true", help="leave out a run DST has already, instead of "
                                                                "refusing")
    c.set_defaults(func=cmd_copy)


def _existing(path: str) -> str:
    from pgknee.store.location import exists

    if not exists(path):
        raise StoreError(f"no collector database at {path}", "point --store at the right file")
    return path


def cmd_import(args: argparse.Namespace) -> int:
    from pgknee.store import sidefile
    from pgknee.store.db import Store
    from pgknee.store.writer import import_side_file

    doc = sidefile.read(args.file)
    args.store = args.store or _store_of(str(doc.get("store")))
    store = Store(_existing(args.store))
    try:
        for line in import_side_file(store, doc):
            print(line)
    finally:
        store.close()
    print(f"the side file {args.file} is loaded: it may go")
    return 0


def _store_of(named: str) -> str:
    """The store a side file names: a PostgreSQL store's DSN there has no password, so it is the
    one in $PGKNEE_STORE_DSN when that is the same store (else ~/.pgpass has to know it)."""
    from pgknee.cli.common import default_store
    from pgknee.store.location import locate

    env = default_store()
    return env if locate(env).label == named else named


def cmd_upgrade(args: argparse.Namespace) -> int:
    from pgknee.store.db import SCHEMA_VERSION, Store

    store = Store(_existing(args.store))
    store.close()
    was = store.migrated_from
    print(f"{store.label}: upgraded from format {was} to {SCHEMA_VERSION}" if was is not None
          else f"{store.label} is in format {SCHEMA_VERSION}, this pgknee's")
    return 0


def _named(text: str) -> str:
    """A store named on the command line; 'env': the DSN in $PGKNEE_STORE_DSN (which may hold a
    password, so that it need not be in the arguments)."""
    import os

    if text != "env":
        return text
    if not os.environ.get("PGKNEE_STORE_DSN"):
        raise StoreError("'env' names the store in $PGKNEE_STORE_DSN, which is not set",
                         "export PGKNEE_STORE_DSN=postgresql://user:password@host/db, or give the DSN")
    return os.environ["PGKNEE_STORE_DSN"]


def cmd_copy(args: argparse.Namespace) -> int:
    from pgknee.store.copy import copy_runs
    from pgknee.store.db import Store
    from pgknee.store.location import locate

    src_text, dst_text = _named(args.src), _named(args.dst)
    if locate(src_text).label == locate(dst_text).label:
        raise StoreError("SRC and DST are the same store", "give two different stores")
    src = Store(src_text, create=False)
    try:
        Store.check_new(dst_text)
        dst = Store(dst_text)
        try:
            n = copy_runs(src, dst, args.runs, skip_existing=args.skip_existing, say=print)
        finally:
            dst.close()
    finally:
        src.close()
    print(f"{n} run(s) copied from {src.label} to {dst.label}")
    return 0
