#!/usr/bin/env bash
# Rotor downwash on the arm (beyond the paper): the workspace at mu = 1 over 24 directions and
# the nominal mission, each without and with downwash, then the table and figure (Fig. 4c with
# and without) in $OUT/downwash.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=downwash hydra.run.dir="$OUT/downwash_workspace" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm +experiment=downwash_mission hydra.run.dir="$OUT/downwash_mission" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/downwash_workspace" "$OUT/downwash_mission" \
  -o "$OUT/downwash" --tables downwash
