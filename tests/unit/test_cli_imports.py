"""Building the pgknee parser and asking any read command for --help loads none of the heavy
libraries: matplotlib, scipy and numpy load with the analysis and the report, psycopg with a
connection, inside the commands that need them. In a fresh interpreter, so that what earlier
tests imported does not hide an import. The real modules, run's included: no stand-in."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("matplotlib", "scipy", "numpy", "psycopg", "rich.table", "prometheus_client", "argcomplete")
READ_COMMANDS = ("run", "runs", "show", "waits", "scenarios", "compare", "recommend", "size", "report", "export",
                 "completion")

_PROBE = """
import contextlib, io, json, sys

from pgknee import cli

cli.build_parser()
helped = {}
for command in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            cli.main([command, "--help"])
        except SystemExit as e:
            helped[command] = (e.code, out.getvalue().splitlines()[0])
print(json.dumps({"helped": helped, "modules": sorted(sys.modules)}))
"""


def test_the_parser_and_every_read_command_help_load_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(READ_COMMANDS)], capture_output=True, text=True,
                          check=True, timeout=60)
    probe = json.loads(done.stdout)
    assert sorted(probe["helped"]) == sorted(READ_COMMANDS)
    for command, (code, first_line) in probe["helped"].items():
        assert code == 0 and first_line.startswith(f"usage: pgknee {command}"), (command, code, first_line)
    loaded = [m for m in probe["modules"] if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == []
    # nor the modules that would pull them in
    assert not [m for m in probe["modules"] if m.startswith(("pgknee.analyze", "pgknee.store", "pgknee.targets"))]
    assert not [m for m in probe["modules"] if m.startswith("pgknee.report.") and m != "pgknee.report.output"]
