"""pgknee report: one run, or several side by side, as a self-contained HTML file or as
markdown with the charts in a folder beside it. Parses and calls report/files.py; the heavy
modules (analysis, charts) load only when the command runs."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from pgknee.base.errors import UserError
from pgknee.cli.common import add_noise_threshold, add_store
from pgknee.cli.recommend import add_recommend_options, add_server_cpus
from pgknee.model.rules import SUMMARIES
from pgknee.report.output import FORMATS, IMAGE_FORMATS, check_output, output_format

if TYPE_CHECKING:
    from pgknee.report.document import Options


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="write a report with charts: one self-contained HTML file, or markdown",
                       description="Write a run's report: the answer and the chart it came from first, then "
                                   "throughput and latency, the pooler, idle sessions, CPU, waits, checks, steps "
                                   "and environment; one HTML file that needs no network, or markdown with its "
                                   "charts beside it. Several runs become one comparison.")
    p.add_argument("runs", nargs="+", metavar="RUN_ID",
                   help="a run (its variants side by side), or several runs to compare (A, B, ... in order)")
    p.add_argument("-o", "--output", required=True, metavar="PATH",
                   help="the file to write (report.html, or report.md with its charts in report_files/; "
                        "'-': HTML to standard output)")
    p.add_argument("--format", choices=FORMATS, help="html or md (default: from the file's extension, else html)")
    p.add_argument("--image-format", choices=IMAGE_FORMATS, default="png",
                   help="the chart files of a markdown report (default png)")
    p.add_argument("--summary", choices=SUMMARIES, help="over repetitions (default: the run's own)")
    add_noise_threshold(p)
    add_recommend_options(p)
    add_server_cpus(p)
    add_store(p)
    p.set_defaults(func=cmd_report)


def options_from(args: argparse.Namespace) -> Options:
    from pgknee.report.document import Options

    return Options(fraction=args.min_fraction, p99_target_ms=args.p99_target, spindles=args.spindles)


def cmd_report(args: argparse.Namespace) -> int:
    from pgknee.cli.loading import loaded

    fmt = output_format(args.output, args.format)
    check_output(args.output, fmt)

    def meanwhile() -> None:  # the renderers' imports (matplotlib, scipy) while the store is read
        from pgknee.report.files import LABELS

        if len(args.runs) > len(LABELS):
            raise UserError(f"a report compares at most {len(LABELS)} runs")

    datas = loaded(args.store, args.runs, meanwhile)
    from pgknee.analyze.run import build
    from pgknee.report.files import write

    ids = [d.run.run_id for d in datas]
    if len(set(ids)) < len(ids):
        raise UserError("the same run is given twice", "give each run once")
    from pgknee.analyze.cpus import with_server_cpus

    views = [build(with_server_cpus(d, args.server_cpus), args.summary, args.noise_threshold) for d in datas]

    def say(text: str) -> None:
        print(f"pgknee: {text} ...", file=sys.stderr, flush=True)

    print(write(args.output, fmt, views, options_from(args), say, args.image_format),
          file=sys.stderr if args.output == "-" else sys.stdout)
    return 0
