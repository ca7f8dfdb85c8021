#!/usr/bin/env bash
# Tip-space control (docs/tipspace_control.md, docs/tipspace.md): reach, trace and pick and
# place, each a Hydra multirun over the tip feedback (conf/experiment/tipspace_*.yaml), $JOBS
# jobs at a time; then the tipspace table in $OUT/tipspace.
set -euo pipefail
. "$(dirname "$0")/common.sh"
for study in tipspace_reach tipspace_trace tipspace_pick_place; do
  "$PYTHON" -m quadarm -m +experiment=$study hydra.sweep.dir="$OUT/tipspace/$study" \
    hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
done
"$PYTHON" -m quadarm.analysis "$OUT/tipspace/tipspace_reach" "$OUT/tipspace/tipspace_trace" \
  "$OUT/tipspace/tipspace_pick_place" -o "$OUT/tipspace" --tables tipspace
