#!/usr/bin/env bash
# Wind (beyond the paper): hover and the mission in a steady wind of 0-8 m/s, and 32 seeds of
# gusty hover (Dryden turbulence), then the table and figure in $OUT/wind.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=wind hydra.run.dir="$OUT/wind_hover" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm +experiment=wind_mission hydra.run.dir="$OUT/wind_mission" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm +experiment=wind_gusts hydra.run.dir="$OUT/wind_gusts" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/wind_hover" "$OUT/wind_mission" "$OUT/wind_gusts" \
  -o "$OUT/wind" --tables wind
