"""pgknee cleanup: what pgknee processes that died left behind (servers, pgbouncers, pgbench,
directories, runs marked running), stopped, removed and marked, from the registry; every
other command does the same quietly when it starts."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("cleanup", help="stop and remove what pgknee processes that died left behind",
                       description="Read the registry of what pgknee processes started; for those that are gone "
                                   "(and their watchdogs too), stop what still runs, remove their directories and "
                                   "mark their runs abandoned, and list what was done.")
    p.set_defaults(func=cmd_cleanup)


def cmd_cleanup(args: argparse.Namespace) -> int:
    from pgknee import registry

    done = registry.sweep()
    for line in done:
        print(line)
    if not done:
        print(f"nothing to clean up (registry: {registry.state_dir()})")
    return 0
