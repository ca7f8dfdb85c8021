#!/usr/bin/env bash
# Table III: a Hydra multirun over the four attitude gain sets (soft, medium, stiff, nominal;
# listed in conf/experiment/table3.yaml), $JOBS missions at a time through the joblib
# launcher. The sweep callback writes $OUT/table3/{runs,metrics}.parquet for the whole sweep;
# the analysis groups the missions by gains.kr.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=table3 hydra.sweep.dir="$OUT/table3" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
# The same sweep spelled out: python -m quadarm -m gains=soft,medium,stiff,nominal
"$PYTHON" -m quadarm.analysis "$OUT/table3" --tables table3
