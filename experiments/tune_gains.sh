#!/usr/bin/env bash
# Gain optimisation: an Optuna search (TPE, seeded) of the mission's gains through Hydra's
# Optuna sweeper (conf/experiment/tune_gains.yaml holds the search space, the objective and
# the penalty of diverged trials), $JOBS missions at a time through the joblib launcher.
# Writes $OUT/tune_gains/: optimization_results.yaml, runs.parquet + metrics.parquet,
# tune_trials.csv, tune_objective.png and gains/tuned.yaml (fly it with
# python -m quadarm --config-dir $OUT/tune_gains gains=tuned). Needs: pip install 'quadarm[tune]'
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=tune_gains hydra.sweep.dir="$OUT/tune_gains" \
  hydra.launcher.n_jobs="$JOBS" hydra.sweeper.n_jobs="$JOBS" runner.resume="$RESUME" \
  runner.progress=false
