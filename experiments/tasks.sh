#!/usr/bin/env bash
# The task suite (docs/tasks.md): every conf/experiment/task_*.yaml as one Hydra multirun
# (every baseline of conf/baseline x sensing exact/realistic, the task's fixed draw as each
# job's grid) into $OUT/tasks/<task>, $JOBS jobs at a time; then quadarm.analysis.tasks builds
# one leaderboard (Markdown + CSV) and one figure per task into $OUT/tasks/report from the
# Parquet files of this run, and refreshes the generated block of docs/tasks.md.
#   TASKS="task_reach task_push"   a subset (default: every study of `make tasks`)
#   TASK_ARGS="+baseline=nominal sensing=exact"   extra overrides for every task (a reduced run)
#   DOCS=""                        leave docs/tasks.md alone
set -euo pipefail
. "$(dirname "$0")/common.sh"
# The studies of `make tasks` in the registry (conf/experiment/*.yaml, '# study: {make: tasks}').
TASKS=${TASKS:-$("$PYTHON" -m quadarm.studies --list tasks | tr '\n' ' ')}
TASK_ARGS=${TASK_ARGS:-}
DOCS=${DOCS-docs/tasks.md}
for task in $TASKS; do
  start=$(date +%s)
  rc=0
  # shellcheck disable=SC2086
  "$PYTHON" -m quadarm -m +experiment="$task" hydra.sweep.dir="$OUT/tasks/$task" \
    hydra.launcher.n_jobs="$JOBS" runner.resume="$RESUME" $TASK_ARGS || rc=$?
  # 3: some trials diverged or failed, a result the leaderboard reports; anything else stops.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then exit "$rc"; fi
  echo "tasks: $task took $(( $(date +%s) - start )) s" >&2
done
dirs=()
for task in $TASKS; do dirs+=("$OUT/tasks/$task"); done
"$PYTHON" -m quadarm.analysis.tasks "${dirs[@]}" -o "$OUT/tasks/report" \
  ${DOCS:+--docs "$DOCS"} --source "\`make tasks\` (experiments/tasks.sh: $TASKS${TASK_ARGS:+, $TASK_ARGS})"
