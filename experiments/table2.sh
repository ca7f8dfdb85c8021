#!/usr/bin/env bash
# Table II: the mission with the nominal gains, then the per-phase table next to the paper's
# (table2.md/.csv) and Figs. 2-3, all in $OUT/table2.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=table2 hydra.run.dir="$OUT/table2" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/table2" --tables table2
