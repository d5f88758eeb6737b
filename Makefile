# The two commands of the README: `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip

.PHONY: run test lint bench demo migrate clean fuzz load faults calibrate

$(VENV)/bin/activate:
	@test -n "$(PYTHON)" || { echo "Python 3.11 is needed (python3.11 / python3 not found)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(VENV)/bin/activate
	$(PIP) install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/activate
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@ $(VENV)/.installed

migrate: $(VENV)/.installed
	$(PY) manage.py migrate --noinput --verbosity 0

demo: migrate
	$(PY) manage.py demo

## Run the app on http://127.0.0.1:8000 (SQLite, Celery eager, demo data).
run: demo
	$(PY) manage.py runserver 127.0.0.1:8000

## Run the whole test suite, in parallel: TEST_WORKERS processes (pytest-xdist;
## each its own test database and Redis database), a file's tests in one
## (tests/replica starts its pair of clusters once; xdist's loadgroup does not
## group under pytest 9).
TEST_WORKERS ?= auto
test: $(VENV)/.installed-dev
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

## Style (ruff) and the layering (README, "Layout"): import-linter's contracts
## in pyproject.toml (no upward import) and no circle among the modules.
lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) tools/import_circles.py

## Benchmarks (figures for the notes); needs PostgreSQL for the HTTP part.
bench: $(VENV)/.installed-dev
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_simulate.py
	$(PY) bench/bench_http.py
	$(PY) bench/count_coup.py
	$(PY) bench/bench_reports.py

## Reliability (figures in var/reliability/). Fuzz the API at length: schemathesis
## over every operation and role, hypothesis on the coup endpoint (the suite runs
## the same, bounded). FUZZ_EXAMPLES per operation and role, HOSTILE_EXAMPLES per
## coup test; add DATABASE_URL=postgres://... for PostgreSQL.
FUZZ_EXAMPLES ?= 20
HOSTILE_EXAMPLES ?= 300
fuzz: $(VENV)/.installed-dev
	FUZZ_LONG=1 FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) HOSTILE_EXAMPLES=$(HOSTILE_EXAMPLES) \
		$(VENV)/bin/pytest tests/hostile -q -p no:cacheprovider $(PYTEST_ARGS)

## The surveillance's long proof on casinos dealt from real shoes (outside CI;
## ~40 min on 2 cores): the any-alert rate of 400 honest runs against the
## stated bound, each test's p-values, the planted patterns' power at floor
## false-draw rates of 0.3 % and 0.5 %. e.g. CALIBRATE_ARGS="--runs 40".
calibrate: $(VENV)/.installed-dev
	nice $(PY) bench/calibrate.py $(CALIBRATE_ARGS)

## N tablets recording coups through gunicorn on PostgreSQL (database load_casino,
## re-created), then proof that every acknowledged coup is stored once.
## e.g. make load LOAD_ARGS="--clients 8,32,64 --duration 6"
load: $(VENV)/.installed-dev
	$(PY) bench/load.py $(LOAD_ARGS)

## PostgreSQL restarted (its own throwaway cluster on port 5439) while tablets
## record, and two tablets racing for one shoe.
faults: $(VENV)/.installed-dev
	$(PY) bench/faults.py $(FAULTS_ARGS)

clean:
	rm -rf $(VENV) var/casino.sqlite3 var/anchors  # anchors name rows of that database
