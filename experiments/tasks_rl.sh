#!/usr/bin/env bash
# The task suite's learned rows (docs/tasks.md section 3): for each task with a hyperparameter
# file conf/learn/<task>.yaml (rl-zoo style: the run's settings and the SB3 algorithm's
# keywords), `python -m quadarm.learn --task <task>` trains one policy per seed in $RL_SEEDS
# and evaluates it on the task's draw (runs/metrics Parquet, the leaderboard's) and on
# held-out targets, into $OUT/tasks_rl/<task>/seed<N>; then the learning curves (return and
# final tip error against environment steps, the seeds as a band) -> $OUT/tasks_rl/<task>/curves.png.
# quadarm.analysis.tasks ranks the learned rows with the model-based ones when given both:
#   python -m quadarm.analysis.tasks outputs/tasks/task_reach outputs/tasks_rl/task_reach -o ...
# Every task registered in quadarm.learn.TASKS has its file (tests/unit/test_learn_targets.py),
# so a new learned task joins this loop by its file: reach, hover in gusts, push, trace.
# RL_STEPS overrides each file's `steps`. RL_BASELINES=1 also flies every model-based bundle
# as the zero action of the task file's environment on the task's draw and on the seeds'
# held-out draws (`python -m quadarm.learn baselines` -> $OUT/tasks_rl/<task>/baselines.json;
# about 5-10 min per task here). RL_RESIDUAL=1 also reruns the first learned row
# (PPO as a residual on the rotor commands, --config none; exact and sensed, seed 0).
set -euo pipefail
. "$(dirname "$0")/common.sh"
RL_SEEDS=${RL_SEEDS:-0 1 2}
steps=()
if [ -n "${RL_STEPS:-}" ]; then steps=(--steps "$RL_STEPS"); fi
for conf in conf/learn/*.yaml; do
  task=$(basename "$conf" .yaml)
  dirs=()
  for seed in $RL_SEEDS; do
    "$PYTHON" -m quadarm.learn --task "$task" --seed "$seed" "${steps[@]}" \
      --out "$OUT/tasks_rl/$task/seed$seed"
    dirs+=("$OUT/tasks_rl/$task/seed$seed")
  done
  "$PYTHON" -m quadarm.learn curves "${dirs[@]}" -o "$OUT/tasks_rl/$task/curves.png"
  if [ "${RL_BASELINES:-0}" = 1 ]; then
    # shellcheck disable=SC2086  # RL_SEEDS is a list of words
    "$PYTHON" -m quadarm.learn baselines --task "$task" --seeds $RL_SEEDS \
      -o "$OUT/tasks_rl/$task"
  fi
done
if [ "${RL_RESIDUAL:-0}" = 1 ]; then
  for obs in exact sensed; do
    "$PYTHON" -m quadarm.learn --config none --task task_reach --observe "$obs" \
      --steps 100000 --envs 8 --seed 0 --out "$OUT/tasks_rl/reach_residual_$obs"
  done
fi
