#!/usr/bin/env bash
# Beyond the paper, sensing (docs/sensing.md): the mission, the disturbance and the held bend on
# the exact state and on each sensing preset's estimates, 16 seeds each
# (conf/experiment/sensing.yaml), and the mission's feed-forward none/com/wrench on exact and
# realistic sensing (conf/experiment/sensing_feedforward.yaml); then the table and figure.
set -euo pipefail
. "$(dirname "$0")/common.sh"
for study in sensing sensing_feedforward; do
  "$PYTHON" -m quadarm -m +experiment=$study hydra.sweep.dir="$OUT/sensing/$study" \
    hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
done
"$PYTHON" -m quadarm.analysis "$OUT/sensing/sensing" "$OUT/sensing/sensing_feedforward" \
  --tables sensing
