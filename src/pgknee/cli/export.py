"""pgknee export RUN: a stored run as CSV or OpenMetrics text, for spreadsheets, notebooks and
Prometheus-compatible tools. Renders with report/export.py; the heavy modules load inside the
command."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pgknee.base.errors import UserError
from pgknee.cli.common import add_store
from pgknee.report.output import check_writable, write_file

FORMATS = ("csv", "openmetrics")
SERIES = ("steps", "samples", "all")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("export", help="a run as CSV or OpenMetrics text",
                       description="Write a run's figures for other tools: CSV for spreadsheets, or the "
                                   "OpenMetrics text exposition (with timestamps) for Prometheus tools; per step,"
                                   " or the samples behind them (--series samples).")
    p.add_argument("run_id", metavar="RUN_ID", help="a run id, a unique prefix of one, or 'last'")
    p.add_argument("--format", choices=FORMATS, required=True,
                   help="csv: one table; openmetrics: the OpenMetrics text format (metric families pgknee_*, "
                        "labels run, variant, clients, rep; samples with their timestamps)")
    p.add_argument("--series", choices=SERIES,
                   help="steps: one row per step (csv's default); samples: one row per point of each sampled "
                        "series (machine, pgbench progress, pooler) and of each step's figures; all: both "
                        "(openmetrics only, its default)")
    p.add_argument("-o", "--output", default="-", metavar="PATH", help="the file to write ('-', the default: "
                                                                        "standard output)")
    add_store(p)
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    series = args.series or ("steps" if args.format == "csv" else "all")
    if args.format == "csv" and series == "all":
        raise UserError("a CSV file holds one table", "export --series steps and --series samples to two files")
    if args.format == "openmetrics" and series != "all":
        raise UserError("OpenMetrics text holds every series of the run", "drop --series, or choose --format csv")
    check_writable(args.output)
    from pgknee.analyze.run import build
    from pgknee.report.export import openmetrics, samples_csv, steps_csv
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    view = build(load_run(Store(args.store, create=False), args.run_id))
    if args.format == "openmetrics":
        data = openmetrics(view)
    else:
        data = (steps_csv(view) if series == "steps" else samples_csv(view)).encode()
    write_file(args.output, data)
    if args.output != "-":
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
