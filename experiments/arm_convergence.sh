#!/usr/bin/env bash
# Arm fidelity (docs/arm.md): the statics grid (96 trials: mu x beta x N x placement) with
# gravity and again in zero gravity (tension_max 1 N, see the experiment file), the mission
# against N (8 trials), then the convergence table, the log-log figure and the
# mission-against-N table in $OUT/arm_convergence.
set -euo pipefail
. "$(dirname "$0")/common.sh"
"$PYTHON" -m quadarm +experiment=arm_convergence hydra.run.dir="$OUT/arm_convergence_statics" \
  runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm +experiment=arm_convergence sim.gravity=[0,0,0] arm.tension_max=1 \
  hydra.run.dir="$OUT/arm_convergence_zero_g" runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm +experiment=arm_convergence_mission \
  hydra.run.dir="$OUT/arm_convergence_mission" runner.n_jobs="$JOBS" runner.resume="$RESUME"
"$PYTHON" -m quadarm.analysis "$OUT/arm_convergence_statics" "$OUT/arm_convergence_zero_g" \
  "$OUT/arm_convergence_mission" \
  -o "$OUT/arm_convergence" --tables arm_convergence,arm_mission
