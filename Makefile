# Two commands on a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: help venv run test test-fast lint kafka-fetch tools bench quality clean

help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 20

# The compiled extension (native/, Rust via maturin, docs/development.md) that processors/ imports: built and
# installed into the venv, again whenever its sources change (cargo keeps its build in native/target).
NATIVE := native/pyproject.toml native/Cargo.toml native/Cargo.lock native/predigest_native.pyi $(wildcard native/src/*.rs)

$(BIN)/predigest: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $@

$(VENV)/.native: $(NATIVE) | $(BIN)/predigest
	$(BIN)/pip install -q --force-reinstall --no-deps ./native
	touch $@

venv: $(BIN)/predigest $(VENV)/.native  ## the virtualenv with predigest (editable), its compiled extension and dev tools

kafka-fetch:  ## fetch Apache Kafka through Maven into .cache/kafka
	bash deploy/kafka/kafka.sh fetch

# promtool and a Prometheus server (Debian's package), the compose-go validator (Go module proxy), and a
# headless Chromium (Debian's package) for the briefing browser's tests.
tools:  ## promtool, Prometheus, chromium and the compose validator the deploy tests use
	bash deploy/ensure-deb.sh prometheus promtool prometheus
	bash deploy/ensure-go-tool.sh compose-check
	bash deploy/ensure-deb.sh chromium chromium

run: venv kafka-fetch  ## the whole pipeline on examples/root, a local broker started for you
	$(BIN)/predigest run --root examples/root --end 2026-09-27T22:20:00+08:00

lint: venv  ## ruff, mypy (product, tests, bench), import-linter, rustfmt (native/)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy tests bench
	$(BIN)/lint-imports
	bash deploy/ensure-rustfmt.sh
	cargo fmt --manifest-path native/Cargo.toml --check

test: lint kafka-fetch tools  ## lint and the whole suite, the real broker included (what CI runs)
	$(BIN)/pytest -q

test-fast: venv  ## the tests that need no broker (a minute or two)
	$(BIN)/pytest -q -m 'not integration'

# The end-to-end benchmark (issue 6), under 15 minutes: `make bench N=1000,10000` for a quicker run.
bench: venv kafka-fetch  ## the end-to-end benchmark, N = 1k, 10k, 100k (about 15 minutes)
	$(BIN)/python -m bench.run $(if $(N),--n $(N))

# The briefing-quality benchmark (issue 11): three roots built from the real corpus, briefed in process against
# their ground truth; seconds, no Kafka. Figures in bench/quality.json, briefings under .cache/quality/.
quality: venv  ## the briefing-quality benchmark on three real roots (seconds)
	$(BIN)/python -m bench.quality

clean:  ## remove the virtualenv, caches and briefings
	rm -rf $(VENV) .cache out
