#!/usr/bin/env bash
# Beyond the paper, arm feed-forward: one Hydra multirun over scenario (mission, held_bend) x
# control.feedforward (none, com, wrench) x the four gain sets (conf/experiment/feedforward.yaml),
# $JOBS jobs at a time; the sweep callback collects $OUT/feedforward/{runs,metrics}.parquet and
# quadarm.analysis builds the feed-forward table and figure from them.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm -m +experiment=feedforward hydra.sweep.dir="$OUT/feedforward" \
  hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/feedforward" --tables feedforward
