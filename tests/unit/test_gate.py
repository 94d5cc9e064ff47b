"""pgknee compare BASE NEW --fail-if: the CI gate on two stored runs of known differences, its
rules parsed strictly, its exit code (9 when a rule fails, 0 when not, 2 on a bad rule)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import make_run_data, step
from stored_runs import store_run

from pgknee import cli
from pgknee.analyze.gate import Rule, judge, parse_rule, welch_ratio
from pgknee.analyze.run import build
from pgknee.base.errors import GATE_FAILED, UserError


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # a table row on one line, whatever the terminal


BASE = {2: [1000.0, 1010.0, 990.0], 4: [1800.0, 1830.0, 1770.0]}  # +-1% spread


def _scaled(factor: float, spread: float = 0.0) -> dict[int, list[float]]:
    return {c: [v * factor * (1 + spread * k) for v, k in zip(vs, (0, 1, -1), strict=True)] for c, vs in BASE.items()}


def _gate(tmp_path: Path, capsys: pytest.CaptureFixture[str], new: dict[int, list[float]], *rules: str,
          p99_factor: float = 1.0) -> tuple[int, str, dict[str, object]]:
    db = tmp_path / "s.db"
    store_run(db, "20270101-000000-base", BASE)
    store_run(db, "20270101-000100-new0", new, p99_factor=p99_factor)
    argv = ["compare", "20270101-000000-base", "20270101-000100-new0", "--store", str(db), "--json", "-"]
    for r in rules:
        argv += ["--fail-if", r]
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, err, json.loads(out)["gate"]


def test_a_ten_percent_drop_beyond_the_noise_fails_the_tps_gate(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc, err, gate = _gate(tmp_path, capsys, _scaled(0.9), "tps < -5%")
    assert rc == GATE_FAILED == 9
    assert gate["failed"] is True and [c["verdict"] for c in gate["checks"]] == ["FAIL", "FAIL"]  # type: ignore
    c2 = gate["checks"][0]  # type: ignore[index]
    assert c2["clients"] == 2 and c2["change_pct"] == pytest.approx(-10.0, abs=0.01)
    assert c2["interval_pct"][1] < -5 and c2["repetitions"] == 3
    assert "gate: FAIL (2 of 2 checks): tps < -5% at c2" in err


def test_a_two_percent_drop_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err, gate = _gate(tmp_path, capsys, _scaled(0.98), "tps < -5%")
    assert rc == 0 and gate["failed"] is False
    assert [c["verdict"] for c in gate["checks"]] == ["PASS", "PASS"]  # type: ignore[index]
    assert "gate: PASS (2 checks of 1 rule(s))" in err


def test_a_drop_within_a_large_spread_passes_as_noise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, gate = _gate(tmp_path, capsys, _scaled(0.9, spread=0.25), "tps < -5%")
    checks = gate["checks"]  # type: ignore[index]
    assert rc == 0 and all(c["change_pct"] < -5 for c in checks)  # type: ignore[union-attr]
    assert {c["verdict"] for c in checks} == {"PASS (within the noise)"}  # type: ignore[union-attr]
    assert all(c["interval_pct"][1] > 0 for c in checks)  # type: ignore[union-attr]


def test_p99_rule_and_several_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err, gate = _gate(tmp_path, capsys, _scaled(1.0), "tps < -5%", "p99 > +10%", p99_factor=1.3)
    verdicts = {(c["rule"], c["clients"]): c["verdict"] for c in gate["checks"]}  # type: ignore[union-attr]
    assert rc == 9 and verdicts == {("tps < -5%", 2): "PASS", ("tps < -5%", 4): "PASS", ("p99 > +10%", 2): "FAIL",
                                    ("p99 > +10%", 4): "FAIL"}
    assert "gate: FAIL (2 of 4 checks): p99 > +10% at c2 base (+30.0%)" in err
    assert [c["rule"] for c in gate["checks"]] == ["tps < -5%"] * 2 + ["p99 > +10%"] * 2  # type: ignore
    assert [c["failed"] for c in gate["checks"]] == [False, False, True, True]  # type: ignore[union-attr]


def test_one_repetition_fails_on_the_threshold_alone_and_says_so(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    store_run(db, "20270101-000000-base", {2: [1000.0]})
    store_run(db, "20270101-000100-new0", {2: [900.0]})
    rc = cli.main(["compare", "20270101-000000-base", "20270101-000100-new0", "--store", str(db),
                   "--fail-if", "tps < -5%"])
    out, _ = capsys.readouterr()
    assert rc == 9 and "FAIL (noise unknown: one repetition)" in out and "unknown (1 rep)" in out


@pytest.mark.parametrize(("rule", "line"), [
    ("tps < 5%", "a rule names a drop (< -N%) or a rise (> +N%) beyond a threshold other than 0 "
                 "(write 'tps < -5%')"),
    ("p99 > -10%", "(write 'p99 > +10%')"),
    ("tps < -0%", "other than 0"),
    ("qps < -5%", "unknown metric 'qps'"),
    ("tps < -5", "is not a rule (write METRIC < -N% or METRIC > +N%"),
    ("tps <= -5%", "is not a rule"),
])
def test_a_bad_rule_is_one_line_and_exit_2_before_the_store_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], rule: str, line: str) -> None:
    rc = cli.main(["compare", "a", "b", "--store", str(tmp_path / "none.db"), "--fail-if", rule])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and line in err, err
    assert not (tmp_path / "none.db").exists()


def test_rules_parse() -> None:
    assert parse_rule("TPS<-5%") == Rule("tps", "<", -5.0)
    assert parse_rule(" p99 > 10 % ") == Rule("p99", ">", 10.0)
    assert parse_rule("latency > +2.5%").text == "latency > +2.5%"
    with pytest.raises(UserError):
        parse_rule("")


def test_welch_interval() -> None:
    r = welch_ratio([100.0, 102.0, 98.0], [90.0, 91.8, 88.2])
    assert r is not None and r.value == pytest.approx(0.9) and r.lo is not None and r.hi is not None
    assert r.lo < 0.9 < r.hi < 1.0 and r.pairs == 3
    same = welch_ratio([100.0, 100.0], [100.0, 100.0])
    assert same is not None and same.lo == same.hi == 1.0
    one = welch_ratio([100.0], [90.0, 91.0])
    assert one is not None and one.lo is None and one.value == pytest.approx(0.9 * 1.0055, rel=1e-3)
    assert welch_ratio([], [1.0]) is None


def test_a_runs_variants_are_judged_against_the_first_with_paired_repetitions() -> None:
    """Repetitions drift together (100, 200, 150): paired, B's steady -10% is beyond the noise
    although each variant's own spread is wide (unpaired, it would be noise); C at 4 clients has
    no A to compare with."""
    steps = [step(step_id=i, seq=i, variant=v, clients=c, rep=r, tps=t)
             for i, (v, c, r, t) in enumerate([
                 ("a", 2, 1, 100.0), ("b", 2, 1, 90.0), ("a", 2, 2, 200.0), ("b", 2, 2, 181.0),
                 ("a", 2, 3, 150.0), ("b", 2, 3, 134.0), ("c", 4, 1, 10.0)], start=1)]
    view = build(make_run_data(steps=steps, scripts={}, failures={}, pgdb={}, os={}, waits={}, waits_bg={},
                               snaps={}))
    gate = judge([view], [parse_rule("tps < -5%")])
    (row,) = gate.rows
    assert gate.paired and gate.base == "a" and (row.variant, row.clients) == ("b", 2)
    assert row.ratio is not None and row.ratio.pairs == 3 and row.change_pct == pytest.approx(-9.9, abs=0.2)
    assert row.failed and row.verdict == "FAIL" and gate.unmatched == ("c c4",)
    unpaired = welch_ratio([100.0, 200.0, 150.0], [90.0, 181.0, 134.0])
    assert unpaired is not None and unpaired.hi is not None and unpaired.hi > 1.0  # unpaired, it is noise
