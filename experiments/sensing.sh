#!/usr/bin/env bash
# Beyond the paper, sensing (docs/sensing.md): the mission, the disturbance and the held bend on
# the exact state and on each sensing preset's estimates, 16 seeds each
# (conf/experiment/sensing.yaml); the mission's feed-forward none/com/wrench on exact and
# realistic sensing (conf/experiment/sensing_feedforward.yaml); the nominal and tuned gains
# under each preset, without and with a 25 ms motor lag (conf/experiment/sensing_gains.yaml);
# then the tables and figures (the tuned-gains study's from its own folder: its tuned-gain
# missions are not the sensing study's).
set -euo pipefail
. "$(dirname "$0")/common.sh"
for study in sensing sensing_feedforward sensing_gains; do
  "$PYTHON" -m quadarm -m +experiment=$study hydra.sweep.dir="$OUT/sensing/$study" \
    hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
done
"$PYTHON" -m quadarm.analysis "$OUT/sensing/sensing" "$OUT/sensing/sensing_feedforward" \
  --tables sensing
"$PYTHON" -m quadarm.analysis "$OUT/sensing/sensing_gains" --tables sensing_gains
