#!/usr/bin/env bash
# Motor lag (beyond the paper): a Hydra multirun over the nominal and stiff gain sets, each job
# the mission at tau = 0, 5, 12.5, 25, 50, 100 ms (conf/experiment/motor_lag.yaml), then the
# table and figure against tau in $OUT/motor_lag.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=motor_lag hydra.sweep.dir="$OUT/motor_lag" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/motor_lag" --tables motor_lag
