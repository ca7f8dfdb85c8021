#!/usr/bin/env bash
# A Monte-Carlo study: the tip disturbance with the hinge stiffness ~ N(nominal, 10 %) and the
# push direction uniform on the circle, 32 trials over $JOBS processes (seeds from
# SeedSequence(seed).spawn; drawn values are columns of runs.parquet). The disturbance table
# then reports the mean, spread and range over the trials.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=monte_carlo hydra.run.dir="$OUT/monte_carlo" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/monte_carlo" --tables disturbance
