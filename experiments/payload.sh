#!/usr/bin/env bash
# Beyond the paper, payload: one Hydra multirun over scenario.payload_mass (50-300 g) x
# control.feedforward (none, wrench) (conf/experiment/payload.yaml), $JOBS jobs at a time; the
# sweep callback collects $OUT/payload/{runs,metrics}.parquet and quadarm.analysis builds the
# payload table and figure from them.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=payload hydra.sweep.dir="$OUT/payload" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/payload" --tables payload
