#!/usr/bin/env bash
# Held bend: mu = 1 held for 30 s while hovering at 1.6 m; the drift (position error) at 5, 15
# and 30 s. (`make drift` and +experiment=drift are the same study under its old name.)
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=held_bend hydra.run.dir="$OUT/held_bend" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/held_bend" --tables held_bend
