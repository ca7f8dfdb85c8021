# quadarm: thin entry points; the studies' commands come from conf/experiment/ (quadarm.studies).
# `make help` lists the targets. Variables: PYTHON, OUT (results root), JOBS (processes),
# RESUME (true: reuse finished trials from the trial store), LEARN_TASK (make bench-learn's task).

PYTHON ?= $(shell test -x .venv/bin/python && echo .venv/bin/python || echo python3)
OUT ?= outputs
JOBS ?= 2
RESUME ?= false
LEARN_TASK ?= task_trace
export PYTHON OUT JOBS RESUME

.DEFAULT_GOAL := help
.PHONY: help install test test-all test-fast lint mission paper beyond all readme bench clean \
	tasks-rl presets bench-learn

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  %-16s %s\n", $$1, $$2}'
	@$(PYTHON) -m quadarm.studies --help-lines 2>/dev/null || \
		echo "  (the studies' targets: $(PYTHON) cannot import quadarm; make install, or PYTHON=...)"

install: ## create .venv (if missing), install quadarm with its dev tools, compile its loops (once, 1-3 min)
	test -x .venv/bin/python || python3 -m venv .venv
	.venv/bin/python -m pip install -e '.[dev]'
	.venv/bin/python -m quadarm --warmup  # numba's one-time compile of the loops, now

test: ## the test suite (the CI command), every test not marked slow: two processes, then the timing tests alone
	$(PYTHON) -m pytest -q -m "not timing and not slow" -n 2 --dist loadfile
	$(PYTHON) -m pytest -q -m "timing and not slow"

test-all: ## every test, the slow ones too (reproduction, compiled-vs-plain of every term, training): several times longer
	$(PYTHON) -m pytest -q -m "not timing" -n 2 --dist loadfile
	$(PYTHON) -m pytest -q -m timing

test-fast: ## the unit tests and the paper's headline (one mission), on two processes: budget 60 s
	$(PYTHON) -m pytest -q -m "not slow" -n 2 --dist loadfile tests/unit tests/model/test_headline.py

lint: ## ruff on everything, mypy on quadarm/
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

mission: ## fly the 36 s mission once -> outputs/mission
	bash experiments/mission.sh

tasks-rl: ## the learned rows: every conf/learn/<task>.yaml (reach, trace, hover in gusts, push: PPO on the hub reference), seeds 0-2, their learning curves (RL_BASELINES=1: the baselines on the same draws too) -> outputs/tasks_rl
	bash experiments/tasks_rl.sh

# Every study's target (table2, workspace, sensing, tasks, ...) comes from the registry of
# studies, conf/experiment/*.yaml's `# study: {make: TARGET, ...}` lines (quadarm/config/
# studies.py, which requires `make` first): one rule runs them all through
# `python -m quadarm.studies TARGET` (`make help` lists them with the rest). Adding a study is
# adding its conf/experiment file.
STUDY_TARGETS := $(filter-out null,$(sort $(shell sed -n \
	's/^\# study: {make: *\([A-Za-z0-9_-]*\).*/\1/p' conf/experiment/*.yaml)))
.PHONY: $(STUDY_TARGETS)
$(STUDY_TARGETS):
	$(PYTHON) -m quadarm.studies $@

paper: ## the paper's studies only: tables (MD + CSV), Figs. 1-5, reproduction.md -> outputs/paper
	bash experiments/paper.sh --studies paper

beyond: ## the studies beyond the paper: their tables, figures and beyond.md -> outputs/paper
	bash experiments/paper.sh --studies beyond

all: ## `make paper` and `make beyond` in one run (reproduction.md lists both)
	bash experiments/paper.sh --studies all

readme: ## `make all`, then refresh every generated block in README.md and docs/*.md
	bash experiments/paper.sh --studies all --readme

bench: ## cost per step: closed loop vs bare mj_step
	$(PYTHON) -m quadarm.bench

bench-learn: ## a learned row's training throughput (LEARN_TASK, default task_trace) against its env's raw stepping, the batched engine and bare mj_step
	$(PYTHON) -m quadarm.bench --learn $(LEARN_TASK) --out $(OUT)/bench_learn.json

clean: ## delete generated results (outputs/) and caches
	rm -rf outputs .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -not -path "./.venv/*" -exec rm -rf {} +

presets: ## regenerate conf/sensing/*.yaml from the datasheets in quadarm/config/sensing.py
	$(PYTHON) -c "import quadarm.config.sensing as s; print(*s.write_presets('conf/sensing'), sep='\n')"
