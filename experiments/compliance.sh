#!/usr/bin/env bash
# The compliance study (beyond the paper): a Hydra multirun over the table and the wall, each
# job the touch task at 1 N over arm stiffness x1, x3, x10, x100 and approach speed 0.1-1 m/s
# (conf/experiment/compliance.yaml), then its table and figure in $OUT/compliance.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=compliance hydra.sweep.dir="$OUT/compliance" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/compliance" --tables compliance
