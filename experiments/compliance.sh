#!/usr/bin/env bash
# The compliance study (beyond the paper): Hydra multiruns of the touch task at 0.5 N, over the
# table and the wall x arm stiffness x1, x3, x10, x100 x approach speed 0.1-1 m/s
# (conf/experiment/compliance.yaml), and over the table's spring mount (rigid, 50, 200,
# 1000 N/m) x the same speeds (conf/experiment/compliance_mount.yaml); then their tables and
# figures in $OUT/compliance and $OUT/compliance_mount.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=compliance hydra.sweep.dir="$OUT/compliance" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/compliance" --tables compliance
"$PYTHON" -m quadarm -m +experiment=compliance_mount hydra.sweep.dir="$OUT/compliance_mount" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/compliance_mount" --tables compliance_mount
