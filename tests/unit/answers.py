"""docs/answers.md: pgknee's whole answer, as `pgknee recommend RUN` prints it, for each verdict,
read line by line with what to do next. Real sweeps from the verdict corpus where this machine
can make the verdict (tests/data/verdicts/), synthetic curves (curves.py) where it cannot, each
said so. The page is this module's output, checked by test_verdicts.py:

    .venv/bin/python tests/unit/answers.py > docs/answers.md"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import corpus
from builders import renew
from curves import CURVES, run_of

from pgknee.model.results import RunData

WIDTH = 110  # the terminal's columns the outputs are printed at


def managed(data: RunData) -> RunData:
    """The run read as if its server were a managed one: its CPUs unknown, its CPU not sampled
    (this machine's samples left out: here they were the server's too, where a managed server's
    client machine is another)."""
    env = {k: v for k, v in data.env.items() if not k.startswith("server.machine.")}
    env.update({"target.kind": "remote", "target.local": "false", "server.machine.cpus_source":
                "unknown: a managed service", "server.managed": "Amazon RDS"})
    return renew(data, env=env, server_os={}, os={})


@dataclass(frozen=True)
class Entry:
    title: str
    source: str  # 'corpus:NAME' or 'curve:NAME'
    variant: str
    what: str  # where the sweep comes from, in a sentence
    reading: tuple[str, ...]  # what the output's lines say
    next: str  # what to do next
    options: dict[str, Any] = field(default_factory=dict)  # recommend()'s: p99_target_ms, fraction
    command: str = "pgknee recommend RUN"
    transform: Callable[[RunData], RunData] | None = None

    def data(self) -> RunData:
        kind, _, name = self.source.partition(":")
        data = corpus.load(name)[1] if kind == "corpus" else run_of(CURVES[name])
        return self.transform(data) if self.transform else data


ENTRIES = (
    Entry("A count with its interval: throughput levels off", "corpus:make-demo-a", "direct",
          "`make demo`'s direct variant on a fresh clone: the e-wallet, 2..32 clients, 10 s, one repetition, "
          "the embedded server on this project's 2-CPU machine.",
          ("**▶ the headline**: the count, its 95% interval (the measured counts the same rule picks on 95% of "
           "copies of the sweep moved by the noise the run measured), the verdict's evidence (the plateau's "
           "level and the first saturated resource) and what would narrow it.",
           "**model**: the Universal Scalability Law fitted to the counts; R² says how well it follows them; each "
           "parameter has its bootstrap interval; where it reaches 95% of its peak or ceiling is an opinion, "
           "printed beside the answer, not the answer. **noise per repetition**: what the run measured, and how.",
           "**knee (Kneedle)**: a published second opinion on where the curve bends; **rule of thumb**: (cores x "
           "2) + spindles with the server's CPUs and where pgknee read them; **checks**: each step's "
           "cross-checks (pgbench's TPS against the server's commits, Little's law, sampled against counted "
           "active time, the client's CPU), how many passed.",
           "**Why**: the evidence in the order it was weighed: the noise, any step out of line, the curve's "
           "shape, the saturated resources, the second opinions and whether they agree, then the figures (TPS, "
           "latency, the top wait event, the CPU, pgbench's own load)."),
          "use 8. The interval spans three measured counts because one repetition cannot tell 4, 8 and 16 "
          "apart on a plateau: `pgknee run --extend RUN --clients 5,11 --reps 3` narrows it in the same run."),
    Entry("A peak", "corpus:tpcb-2-64", "base",
          "`pgknee run --workload tpcb --clients 2,4,8,16,32,64 --duration 10s` here: TPC-B at scale 1, every "
          "transaction updating the one branch row.",
          ("throughput falls beyond the noise after its best: the sessions queue on one row lock.",
           "the headline's count is the smallest measured count reaching 95% of the level around the peak; the "
           "counts proposed split the brackets around it.",
           "the Why lines name the wait class above the CPUs (Lock) from the count where it was."),
          "use 4; to see whether 3 serves as well, `pgknee run --extend RUN --clients 3`."),
    Entry("A peak or a level: one repetition cannot tell", "curve:a measured peak", "base",
          "A synthetic sweep (a real one did not come out this way here): 2,000 / 3,900 / 5,000 / 4,300 / "
          "4,400 TPS at 2..32 clients, the CPU saturated from 8.",
          ("16 and 32 are 12-14% below 8, but five counts of one repetition scatter by as much around any smooth "
           "curve: whether it peaks or levels off is within the noise, and the count is 8 either way.",
           "the counts to measure next split the brackets around the answer, never beyond it."),
          "`pgknee run --extend RUN --clients 5,11 --reps 3`."),
    Entry("Saturated: an answer for now", "corpus:ewallet-reference-1-8", "base",
          "The e-wallet here, every count 1..8, three repetitions of 30 s: the CPU saturated from 3 clients, yet "
          "8 still 14% above 4 (group commit: one WAL flush serves more commits).",
          ("the curve still grows (or may: within the noise) and a resource is saturated: an answer \"for now\", "
           "read against the best so far, and nothing upward is proposed but one doubling to see where the "
           "growth ends.",
           "the Why lines show the saturated CPU and the wait event that grew (LWLock:WALWrite)."),
          "`pgknee run --extend RUN --clients 10,12,16`; this project's reference sweep did, and the answer "
          "became 7 or 8 (docs/reading-the-answer.md, ewallet-reference-1-32)."),
    Entry("Peak not reached", "curve:still growing", "base",
          "A synthetic sweep (a 2-CPU machine cannot make one): each doubling of 2..32 clients still buys 70-90% "
          "more, nothing busy.",
          ("no count: throughput still grows beyond the noise and no sampled resource is near its limit, so the "
           "sweep stopped too early; this is the only verdict that proposes larger counts.",),
          "`pgknee run --extend RUN --clients 64,128,256,512` (or `pgknee run --until-answer`)."),
    Entry("Withheld: the server's CPUs unknown", "corpus:ewallet-reference-1-8", "base",
          "The saturated sweep above, read as pgknee reads a managed server's (its CPUs unknown, its CPU not "
          "sampled; this machine's CPU samples left out, since here they were the server's too): the same "
          "figures, no view of the server's machine.",
          ("no count: throughput still grows, and with neither the server's CPU nor its CPU count nothing can "
           "say whether it saturated: \"peak not reached\" would be a guess.",
           "the rule of thumb is withheld for the same reason, and says how to give the count."),
          "read the instance's vCPUs in the provider's console, then `pgknee recommend RUN --server-cpus 2`: "
          "the wait profile is read against them and the answer becomes \"saturated, for now\" (below).",
          transform=managed),
    Entry("...and with its CPUs given", "corpus:ewallet-reference-1-8", "base",
          "The same run with `pgknee recommend RUN --server-cpus 2`.",
          ("the Average Active Sessions are read against the 2 CPUs given: no one wait class is above them "
           "(LWLock 1.31 at 8 clients), but the sessions at work together are from 7 clients: the server's "
           "sessions queue, so the answer is \"for now\" again, without the server's own CPU figures.",),
          "as for the saturated sweep: one doubling more.",
          command="pgknee recommend RUN --server-cpus 2",
          transform=lambda d: __import__("pgknee.analyze.cpus", fromlist=["x"]).with_server_cpus(managed(d), 2)),
    Entry("Withheld: the client set the pace", "curve:client-bound", "base",
          "A synthetic sweep: pgbench's threads at 95% of their capacity from 8 clients.",
          ("no count: the curve flattens, but it is pgbench's limit, not the server's.",),
          "more pgbench threads (`--threads`), a bigger client machine, or agents (`--agents N`)."),
    Entry("No count meets the latency target", "corpus:make-demo-a", "direct",
          "`make demo`'s direct variant again, asked for p99 under 3 ms.",
          ("the headline says both sides of the trade: the count that reaches 95% of the plateau and its p99, "
           "and the most throughput a count gave under the target.",),
          "decide which gives: `--min-fraction 85%` (4 clients) or `--p99-target 5ms` (8).",
          options={"p99_target_ms": 3.0}, command="pgknee recommend RUN --p99-target 3ms"),
)


def output(e: Entry) -> str:
    """What `pgknee recommend` prints for the entry's variant (the terminal's text, no colour)."""
    from rich.console import Console

    from pgknee.report.terminal import recommendation_items

    c = Console(width=WIDTH, record=True, file=io.StringIO(), color_system=None)
    for item in recommendation_items(answer(e.title)):
        c.print(item)
    return "\n".join(line.rstrip() for line in c.export_text().splitlines()).strip("\n")


@functools.cache
def answer(title: str) -> Any:
    """pgknee's recommendation for the entry of that title (made once: the tests read it twice)."""
    from pgknee.analyze.recommend import recommend
    from pgknee.analyze.run import build

    e = next(x for x in ENTRIES if x.title == title)
    return recommend(build(e.data()), e.variant, **e.options)


def markdown() -> str:
    out = ["# Every verdict, as pgknee prints it", "",
           "<!-- written by tests/unit/answers.py; the tests check it is that script's output -->", "",
           "What `pgknee recommend RUN` prints for each kind of answer (`pgknee run --recommend` prints the same "
           "at the end of a run), read line by line, with what to do next. The report's *Recommendation* "
           "section carries the same lines, with the scalability chart after the headline (see "
           "[Reports](report.md)). [Reading the answer](reading-the-answer.md) says how pgknee decides.", "",
           "![The top of a report: the headline, then the chart it came from: the measured medians, the model, the "
           "answer, its 95% interval, the plateau](screenshots/report-top.png)", ""]
    for e in ENTRIES:
        out += [f"## {e.title}", "", e.what, "", f"`{e.command}`:", "", "```text", output(e), "```", ""]
        out += [f"- {x}" for x in e.reading]
        out += ["", f"*Next*: {e.next}", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(markdown())
