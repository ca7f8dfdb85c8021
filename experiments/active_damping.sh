#!/usr/bin/env bash
# Beyond the paper, active tendon damping: the tip disturbance over the grid of
# control.tendon_damping x control.tendon_bias (conf/experiment/active_damping.yaml, one Hydra
# multirun), then the recommended setting on its own (the experiment's base job), and the
# damping table and figure from the Parquet files.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=active_damping hydra.sweep.dir="$OUT/active_damping" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm scenario=disturbance +experiment=active_damping \
  hydra.run.dir="$OUT/active_damping/recommended" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/active_damping" --tables active_damping
