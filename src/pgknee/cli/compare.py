"""pgknee compare: variants of one run, or two runs, side by side, from the store. The heavy
modules (analysis, reports, the store, rich) load inside the command."""

from __future__ import annotations

import argparse
from typing import Any

from pgknee.base.errors import GATE_FAILED, UserError
from pgknee.cli.common import add_noise_threshold, add_store, print_items, stdout_outputs
from pgknee.model.rules import SUMMARIES
from pgknee.report.output import write_text_file


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help="variants of one run, or two runs, side by side",
                       description="Put the variants of one run, or two runs, side by side: TPS and latency by "
                                   "client count with the change and its interval, what differs between the runs'"
                                   " environments, and with --fail-if a CI gate.")
    p.add_argument("runs", nargs="+", metavar="RUN_ID", help="one run (its variants) or two runs")
    p.add_argument("--summary", choices=SUMMARIES, help="over repetitions (default: the run's own)")
    add_noise_threshold(p)
    p.add_argument("--fail-if", action="append", metavar="RULE", default=[],
                   help="a CI gate, repeatable: 'tps < -5%%' or 'p99 > +10%%' (metrics: tps, latency, p50, p95, "
                        "p99); exit code 9 when a client count's change passes the threshold beyond the noise "
                        "(its 95%% interval excludes no change); with one repetition the threshold alone decides")
    p.add_argument("--json", metavar="PATH", help="also write the comparison as JSON ('-': standard output)")
    add_store(p)
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.text import Text

    from pgknee.analyze.compare import headlines, metadata_differences
    from pgknee.analyze.gate import judge, parse_rule
    from pgknee.analyze.run import build, combined
    from pgknee.report.gate import gate_items, gate_json
    from pgknee.report.jsonout import compare_json, dumps
    from pgknee.report.network import network_items
    from pgknee.report.side_by_side import variant_comparison
    from pgknee.report.terminal import compare_header, differences
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    if len(args.runs) > 2:
        raise UserError("compare takes one run (its variants) or two runs")
    rules = [parse_rule(text) for text in args.fail_if]  # bad rules refused before the store is read
    store = Store(args.store, create=False)
    views = [build(load_run(store, r), args.summary, args.noise_threshold) for r in args.runs]
    items: list[Any] = []
    if len(views) == 1:
        view = views[0]
        if len(view.variants()) < 2:
            raise UserError(f"run {view.data.run.run_id} has one variant only",
                            "give two runs, or run with --variant A --variant B")
        diffs: list[str] = []
    else:
        if views[0].data.run.run_id == views[1].data.run.run_id:
            raise UserError("the two runs are the same run")
        view = combined(views, "AB")
        diffs = metadata_differences(views[0].data.env, views[1].data.env)
    table = variant_comparison(view)
    assert table is not None
    items += [compare_header(views), table, *[Text("▶ " + h) for h in headlines(view)], *network_items(view)]
    if diffs:
        items.append(differences(diffs))
    gate = judge(views, rules) if rules else None
    items += gate_items(gate) if gate is not None else []
    print_items(items, to_stderr=stdout_outputs(args.json))
    if args.json:
        out = compare_json(views, view, diffs)
        write_text_file(args.json, dumps({**out, "gate": gate_json(gate)} if gate is not None else out))
    return GATE_FAILED if gate is not None and gate.failed else 0
