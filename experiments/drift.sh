#!/usr/bin/env bash
# Held-bend drift: mu = 1 held for 30 s while hovering at 1.6 m; error at 5, 15 and 30 s.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=drift hydra.run.dir="$OUT/drift" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/drift" --tables drift
