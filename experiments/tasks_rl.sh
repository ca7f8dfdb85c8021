#!/usr/bin/env bash
# The task suite's learned baseline (docs/tasks.md): PPO (Stable-Baselines3, torch on the CPU)
# as a residual on the paper's controller, trained on the batched reach environment with
# exact and with sensed observations (sensing=realistic), seed 0, $RL_STEPS environment steps
# each on $RL_ENVS environments; each policy is then flown on the 16 targets of
# conf/experiment/task_reach.yaml and written as runs/metrics Parquet into $OUT/tasks_rl/<obs>.
# quadarm.analysis.tasks ranks them with the model-based rows when given both folders:
#   python -m quadarm.analysis.tasks outputs/tasks/task_reach outputs/tasks_rl -o ...
set -euo pipefail
. "$(dirname "$0")/common.sh"
RL_STEPS=${RL_STEPS:-100000}
RL_ENVS=${RL_ENVS:-8}
for obs in exact sensed; do
  "$PYTHON" -m quadarm.learn --task task_reach --observe "$obs" --steps "$RL_STEPS" \
    --envs "$RL_ENVS" --seed 0 --out "$OUT/tasks_rl/reach_$obs"
done
