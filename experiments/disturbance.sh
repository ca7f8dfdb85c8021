#!/usr/bin/env bash
# Tip disturbance (Fig. 5): a 2 N, 0.2 s push on the distal link while hovering at 1 m.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=disturbance hydra.run.dir="$OUT/disturbance" \
  runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/disturbance" --tables disturbance
