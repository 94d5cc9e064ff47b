"""pgknee store: the collector database itself. `import FILE` loads a side file back (a step's
results, and how its run ended, that the store could not take when pgknee wrote them: the
error line named the file); `upgrade` brings a store written by an older pgknee to this one's
format in place (the read commands read an older store through an upgraded copy of their own,
each time, and never change it)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pgknee.cli.common import add_store
from pgknee.errors import StoreError


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


def _existing(path: str) -> str:
    if not Path(path).exists():
        raise StoreError(f"no collector database at {path}", "point --store at the right file")
    return path


def cmd_import(args: argparse.Namespace) -> int:
    from pgknee.store import sidefile
    from pgknee.store.db import Store
    from pgknee.store.writer import import_side_file

    doc = sidefile.read(args.file)
    args.store = args.store or str(doc.get("store"))
    store = Store(_existing(args.store))
    try:
        for line in import_side_file(store, doc):
            print(line)
    finally:
        store.close()
    print(f"the side file {args.file} is loaded: it may go")
    return 0


def cmd_upgrade(args: argparse.Namespace) -> int:
    from pgknee.store.db import SCHEMA_VERSION, Store

    store = Store(_existing(args.store))
    store.close()
    was = store.migrated_from
    print(f"{args.store}: upgraded from format {was} to {SCHEMA_VERSION}" if was is not None
          else f"{args.store} is in format {SCHEMA_VERSION}, this pgknee's")
    return 0
