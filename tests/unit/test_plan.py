from __future__ import annotations

import json

import pytest

from pgknee.base.errors import UserError
from pgknee.plan import (
    DEFAULT_CLIENTS,
    Plan,
    TargetSpec,
    Variant,
    WorkloadSpec,
    parse_clients,
    parse_seconds,
)

# ---- parse_clients --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("2,4,8", (2, 4, 8)),
    (" 2 , 4 ,8 ", (2, 4, 8)),
    ("16", (16,)),
    ("32,2,8", (32, 2, 8)),  # order preserved, not sorted
    ("2:32:x2", (2, 4, 8, 16, 32)),
    ("2:40:x2", (2, 4, 8, 16, 32)),  # stops before passing STOP
    ("1:27:x3", (1, 3, 9, 27)),
    ("2:32:X2", (2, 4, 8, 16, 32)),  # the factor's x is case-insensitive
    ("5:5:1", (5,)),
    ("1,10:30:10,64", (1, 10, 20, 30, 64)),
])
def test_parse_clients_values(text: str, expected: tuple[int, ...]) -> None:
    assert parse_clients(text) == expected


def test_parse_clients_linear_range() -> None:
    got = parse_clients("50:1000:50")
    assert got == tuple(range(50, 1001, 50))
    assert len(got) == 20
    assert got[0] == 50 and got[-1] == 1000


def test_parse_clients_mixed_keeps_order_of_entries() -> None:
    assert parse_clients("64,2:8:x2,3") == (64, 2, 4, 8, 3)


@pytest.mark.parametrize(("text", "fragment"), [
    ("", "empty"),
    ("   ", "empty"),
    ("2,,4", "empty entry"),
    ("2,4,", "empty entry"),
    ("a,b", "'a'"),
    ("2,x", "not a whole number"),
    ("2.5", "not a whole number"),
    ("0", "at least 1"),
    ("-3", "at least 1"),
    ("4,0", "at least 1"),
    ("8:2:1", "backwards"),
    ("2:32:x1", "factor must be 2 or more"),
    ("2:32", "START:STOP:STEP"),
    ("2:32:4:8", "START:STOP:STEP"),
    ("2:32:0", "at least 1"),
    ("2:32:xx", "not a whole number"),
    ("1:2000:1", "1000 steps"),
    ("1:600:1,1:600:1", "expands to 1200 steps"),  # each range is small, the list is not
])
def test_parse_clients_errors(text: str, fragment: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_clients(text)
    assert fragment in ei.value.one_line()
    assert ei.value.exit_code == 2


def test_parse_clients_error_hints_at_the_syntax() -> None:
    with pytest.raises(UserError) as ei:
        parse_clients("a,b")
    assert ei.value.hint is not None and "--clients 2,4,8" in ei.value.hint
    with pytest.raises(UserError) as ei:
        parse_clients("")
    assert ei.value.hint is not None and "--clients" in ei.value.hint


def test_parse_clients_limit_is_exactly_1000() -> None:
    assert len(parse_clients("1:1000:1")) == 1000
    with pytest.raises(UserError) as ei:
        parse_clients("1:1001:1")
    assert "steps" in ei.value.message and ei.value.hint == "use a coarser step"


def test_parse_clients_huge_range_is_a_user_error_not_a_memory_blowup() -> None:
    # found while writing these tests: the range was built before the limit was checked (OverflowError
    # here; a STOP like 1000000000 would eat gigabytes, so it is deliberately not tried)
    with pytest.raises(UserError, match="steps"):
        parse_clients("1:1000000000000000000000:1")


def test_parse_clients_huge_doubling_range_is_short() -> None:
    got = parse_clients("1:1000000000000000000000:x10")
    assert got == tuple(10**i for i in range(22))


# ---- parse_seconds --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("180s", 180.0),
    ("3m", 180.0),
    ("2min", 120.0),
    ("1h", 3600.0),
    ("500ms", 0.5),
    ("1.5s", 1.5),
    (" 30 S ", 30.0),
    ("10sec", 10.0),
])
def test_parse_seconds(text: str, expected: float) -> None:
    assert parse_seconds(text, "--duration") == pytest.approx(expected)


@pytest.mark.parametrize("text", ["0", "0s", "0ms"])
def test_parse_seconds_zero_rejected_unless_allowed(text: str) -> None:
    with pytest.raises(UserError, match="greater than zero"):
        parse_seconds(text, "--duration")
    assert parse_seconds(text, "--warmup", allow_zero=True) == 0.0


@pytest.mark.parametrize("text", ["-5", "-5s", "abc", "", "5 parsecs", "1e3", "s", "5s5", "nan", "inf"])
def test_parse_seconds_garbage(text: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_seconds(text, "--duration")
    assert "--duration" in ei.value.message
    assert repr(text) in ei.value.message
    assert ei.value.hint is not None and "30s" in ei.value.hint


def test_parse_seconds_whole() -> None:
    assert parse_seconds("2m", "--duration", whole=True) == 120.0
    assert parse_seconds("2000ms", "--duration", whole=True) == 2.0
    with pytest.raises(UserError, match="whole number of seconds"):
        parse_seconds("1.5s", "--duration", whole=True)
    with pytest.raises(UserError, match="whole number of seconds"):
        parse_seconds("500ms", "--duration", whole=True)


# ---- Plan -----------------------------------------------------------------------------------------


def test_plan_defaults_are_valid() -> None:
    p = Plan()
    assert p.clients == DEFAULT_CLIENTS
    assert p.duration_s == 60 and p.reps == 1
    assert p.variants == (Variant("base", "prepared"),)


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"duration_s": 0}, "--duration"),
    ({"duration_s": -1}, "--duration"),
    ({"reps": 0}, "--reps"),
    ({"warmup_s": -1}, "--warmup"),
    ({"threads": 0}, "--threads"),
    ({"max_tries": 0}, "--max-tries"),
    ({"clients": ()}, "client list is empty"),
    ({"sample_interval_s": 0.005}, "--sample-interval"),
    ({"sample_interval_s": 0.009}, "--sample-interval"),
    ({"os_interval_s": 0.05}, "--os-interval"),
    ({"log_sampling_rate": 0.0}, "--log-sampling-rate"),
    ({"log_sampling_rate": 1.5}, "--log-sampling-rate"),
    ({"workload": WorkloadSpec(scale=0)}, "--scale"),
    ({"workload": WorkloadSpec(scale=float("inf"))}, "--scale"),
])
def test_plan_validation(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(UserError) as ei:
        Plan(**kwargs)  # type: ignore[arg-type]
    assert fragment in ei.value.one_line()


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda: Variant(protocol="binary"), "unknown protocol 'binary'"),
    (lambda: WorkloadSpec(schema="Bad-Name"), "schema name 'Bad-Name'"),
    (lambda: WorkloadSpec(schema="x; drop table y"), "schema name"),
    (lambda: WorkloadSpec(schema="a" * 64), "schema name"),
    (lambda: WorkloadSpec(schema="public"), "PostgreSQL's own or shared"),
    (lambda: WorkloadSpec(schema="pg_temp"), "PostgreSQL's own or shared"),
    (lambda: Variant(name="a\nb"), "printable"),
    (lambda: Variant(idle=-1), "idle=-1"),
    (lambda: Variant(settings=(("hba_file", "/etc/x"),)), "pgknee does not set hba_file"),
    (lambda: TargetSpec(settings=(("work_mem", "4MB\nlisten_addresses='*'"),)), "control character"),
])
def test_records_check_themselves(make: object, fragment: str) -> None:
    """Every plan record validates itself, whatever built it (flags, a file, a stored plan)."""
    with pytest.raises(UserError) as ei:
        make()  # type: ignore[operator]
    assert fragment in ei.value.one_line()


def test_plan_bad_protocol_hint_lists_the_choices() -> None:
    with pytest.raises(UserError) as ei:
        Variant(protocol="binary")
    assert ei.value.hint == "choose one of simple, extended, prepared"


@pytest.mark.parametrize("interval", [0, 0.0, 0.01, 0.1, 1.0])
def test_plan_sample_interval_zero_or_at_least_10ms(interval: float) -> None:
    assert Plan(sample_interval_s=interval).sample_interval_s == interval


@pytest.mark.parametrize("interval", [0, 0.1, 1.0])
def test_plan_os_interval_zero_or_at_least_100ms(interval: float) -> None:
    assert Plan(os_interval_s=interval).os_interval_s == interval


def test_plan_accepts_edge_values() -> None:
    p = Plan(duration_s=1, reps=1, threads=1, max_tries=1, log_sampling_rate=1.0,
             workload=WorkloadSpec(schema="_" + "a" * 62))
    assert p.duration_s == 1 and len(p.workload.schema) == 63


@pytest.mark.parametrize(("threads", "clients", "cpus", "expected"), [
    (None, 2, 8, 2),  # never more threads than clients
    (None, 32, 8, 8),  # one per CPU
    (None, 8, 8, 8),
    (None, 1, 0, 1),  # at least one
    (4, 2, 64, 2),  # an explicit count is still capped by the clients
    (4, 16, 1, 4),  # ... and not by the CPUs
])
def test_threads_for(threads: int | None, clients: int, cpus: int, expected: int) -> None:
    assert Plan(threads=threads).threads_for(clients, cpus) == expected


def test_estimated_seconds() -> None:
    p = Plan(clients=(2, 4, 8), duration_s=10, reps=2, warmup_s=5, variants=(Variant("a"), Variant("b", "simple")))
    # (10 + 5 + 0.5 + 1 + 2) per step (the 'pre' wait, measured, takes some 0.3 s of its 5 s at most)
    # x 3 clients x 2 reps x 2 variants
    assert p.estimated_seconds() == 18.5 * 3 * 2 * 2


def test_plan_to_dict_redacts_the_password_and_is_json() -> None:
    p = Plan(target=TargetSpec(dsn="postgresql://alice:Sup3rS3cret@db.example.com:5433/shop"), clients=(2, 4))
    d = p.to_dict()
    text = json.dumps(d)
    assert "Sup3rS3cret" not in text
    assert "password" not in d["target"]["dsn"]
    for part in ("user=alice", "host=db.example.com", "port=5433", "dbname=shop"):
        assert part in d["target"]["dsn"]
    assert d["clients"] == (2, 4)
    assert d["variants"] == ({"name": "base", "protocol": "prepared", "pipeline": False, "connect_per_txn": False,
                                 "rate": None, "think_ms": 0.0, "pooler": None, "idle": 0,
                                 "idle_kind": "quiet", "settings": (), "rtt_ms": 0.0, "rtt_jitter_ms": 0.0},)
    assert json.loads(text)["variants"] == [{"name": "base", "protocol": "prepared", "pipeline": False,
                                             "connect_per_txn": False, "rate": None, "think_ms": 0.0, "pooler": None,
                                             "idle": 0, "idle_kind": "quiet", "settings": [], "rtt_ms": 0.0,
                                             "rtt_jitter_ms": 0.0}]
    assert p.target.dsn is not None and "Sup3rS3cret" in p.target.dsn  # the plan itself is unchanged


def test_plan_to_dict_without_dsn() -> None:
    d = Plan().to_dict()
    assert d["target"]["dsn"] is None
    assert d["workload"] == {"name": "ewallet", "scale": 1.0, "schema": "pgknee_ewallet", "reinit": False,
                             "scripts": (), "path": "", "allow_writes": False}
    assert WorkloadSpec(name="tpcb").schema == "pgknee_pgbench"  # pgbench's tables in pgknee's own schema


def test_a_latency_without_a_unit_is_refused_where_a_dba_writes_milliseconds() -> None:
    """pgknee size --latency 50 read 50 seconds and answered 50,000 connections; --p99-target 20
    meant 20 s. A duration carries its unit or is refused in one line: a latency, a step's
    duration, a think time, a round trip alike; 0 is the same in every unit."""
    from pgknee.base.errors import UserError
    from pgknee.plan.parse import parse_seconds

    assert parse_seconds("50ms", "--latency") == 0.05
    with pytest.raises(UserError) as e:
        parse_seconds("50", "--latency")
    assert e.value.message == "--latency '50' has no unit" and e.value.hint == "write it with one: 50s, or 50ms"
    with pytest.raises(UserError) as e:  # whole seconds (pgbench -T): no milliseconds offered
        parse_seconds(" 10 ", "--duration", whole=True)
    assert e.value.message == "--duration ' 10 ' has no unit" and e.value.hint == "write it with one: 10s"
    for what, bare in (("--duration", "10"), ("think time in variant 'think=5'", "5"), ("rtt", "2"), ("--wait", "1.5")):
        with pytest.raises(UserError, match="has no unit"):
            parse_seconds(bare, what)
    assert parse_seconds("0", "--warmup", allow_zero=True) == 0.0


def test_a_size_without_a_unit_is_refused() -> None:
    """--server-memory 64 read 64 GB silently: a size carries its unit."""
    from pgknee.base.errors import UserError
    from pgknee.plan.parse import parse_memory_gb

    assert parse_memory_gb("64GB") == 64.0 and parse_memory_gb("512MB") == 0.5
    with pytest.raises(UserError) as e:
        parse_memory_gb("64")
    assert e.value.message == "--server-memory '64' has no unit"
