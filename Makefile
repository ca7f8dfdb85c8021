# quadarm: thin entry points; the commands themselves live in experiments/*.sh.
# `make help` lists the targets. Variables: PYTHON, OUT (results root), JOBS (processes),
# RESUME (true: reuse finished trials from the trial store).

PYTHON ?= $(shell test -x .venv/bin/python && echo .venv/bin/python || echo python3)
OUT ?= outputs
JOBS ?= 2
RESUME ?= false
export PYTHON OUT JOBS RESUME

.DEFAULT_GOAL := help
.PHONY: help install test test-all test-fast lint mission table2 table3 workspace disturbance held-bend \
	drift monte-carlo motor-lag compliance downwash wind feedforward payload active-damping sensing arm-convergence tune \
	paper beyond all readme bench clean tasks tasks-rl presets tune-pareto tipspace

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  %-16s %s\n", $$1, $$2}'

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

test-fast: ## the unit tests and the paper's headline (one mission), on two processes: under a minute
	$(PYTHON) -m pytest -q -m "not slow" -n 2 --dist loadfile tests/unit tests/model/test_headline.py

lint: ## ruff on everything, mypy on quadarm/
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

mission: ## fly the 36 s mission once -> outputs/mission
	bash experiments/mission.sh

table2: ## Table II (+ Figs. 2-3) -> outputs/table2
	bash experiments/table2.sh

table3: ## Table III: multirun over the four gain sets -> outputs/table3
	bash experiments/table3.sh

workspace: ## workspace mu and beta grids, table and Fig. 4 -> outputs/workspace
	bash experiments/workspace.sh

disturbance: ## tip disturbance table and Fig. 5 -> outputs/disturbance
	bash experiments/disturbance.sh

held-bend: ## held-bend drift table and plot -> outputs/held_bend
	bash experiments/held_bend.sh

drift: held-bend ## the same as held-bend (its old name)

monte-carlo: ## Monte-Carlo disturbance study, 32 trials -> outputs/monte_carlo
	bash experiments/monte_carlo.sh

motor-lag: ## beyond the paper: mission vs motor time constant, two gain sets -> outputs/motor_lag
	bash experiments/motor_lag.sh

compliance: ## beyond the paper: touch table/wall vs arm stiffness, table vs mount stiffness, x approach speed -> outputs/compliance*
	bash experiments/compliance.sh

downwash: ## beyond the paper: workspace and mission without/with rotor downwash -> outputs/downwash
	bash experiments/downwash.sh

wind: ## beyond the paper: steady wind 0-8 m/s, 32 seeds of gusty hover -> outputs/wind
	bash experiments/wind.sh

feedforward: ## beyond the paper: arm feed-forward none/com/wrench x gain sets -> outputs/feedforward
	bash experiments/feedforward.sh

payload: ## beyond the paper: payload grasp/release in hover, mass x feed-forward -> outputs/payload
	bash experiments/payload.sh

active-damping: ## beyond the paper: tip disturbance over the tendon-damping grid -> outputs/active_damping
	bash experiments/active_damping.sh

sensing: ## beyond the paper: the controllers on the estimates, exact vs sensing presets, tuned gains under sensing and lag, 16 seeds -> outputs/sensing
	bash experiments/sensing.sh

arm-convergence: ## arm fidelity: discretised arm vs Cosserat rod, N = 6..48 -> outputs/arm_convergence
	bash experiments/arm_convergence.sh

tune: ## Optuna search of the gains, 100 missions -> outputs/tune_gains (gains/tuned.yaml)
	bash experiments/tune_gains.sh

tipspace: ## tip-space control: reach, trace, pick and place x the tip feedback -> outputs/tipspace
	bash experiments/tipspace.sh

tune-pareto: ## two-objective Optuna search (RMS error, max tilt): a Pareto front -> outputs/tune_gains_pareto
	$(PYTHON) -m quadarm -m +experiment=tune_gains_pareto hydra.sweep.dir="$(OUT)/tune_gains_pareto" \
		hydra.launcher.n_jobs="$(JOBS)" runner.resume="$(RESUME)" runner.progress=false

tasks: ## the task suite: every conf/experiment/task_*.yaml x baseline x sensing, leaderboards -> outputs/tasks, docs/tasks.md
	bash experiments/tasks.sh

tasks-rl: ## the learned baseline: PPO (residual on the paper's controller) on reach, exact and sensed -> outputs/tasks_rl
	bash experiments/tasks_rl.sh

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

clean: ## delete generated results (outputs/) and caches
	rm -rf outputs .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -not -path "./.venv/*" -exec rm -rf {} +

.PHONY: identify
identify: ## fit the FTDCR v4 arm to its recordings (stages 1-3, report) -> outputs/identify/ftdcr_v4
	$(PYTHON) -m quadarm.identify +experiment=identify_ftdcr_v4 identify.out=$(OUT)/identify/ftdcr_v4

presets: ## regenerate conf/sensing/*.yaml from the datasheets in quadarm/config/sensing.py
	$(PYTHON) -c "import quadarm.config.sensing as s; print(*s.write_presets('conf/sensing'), sep='\n')"
