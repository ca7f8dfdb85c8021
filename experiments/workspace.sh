#!/usr/bin/env bash
# Bending workspace (Fig. 4): the mu grid (0..1 step 0.1 at beta = 0) and the beta grid
# (0..345 deg step 15 at mu = 1), each one job whose grid points run as parallel trials
# (runner.grid), then the workspace table and Fig. 4 in $OUT/workspace.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=workspace_mu hydra.run.dir="$OUT/workspace_mu" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm +experiment=workspace_beta hydra.run.dir="$OUT/workspace_beta" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/workspace_mu" "$OUT/workspace_beta" \
  -o "$OUT/workspace" --tables workspace
