"""PPO (Stable-Baselines3) learns the hover thrust in minutes on two CPU cores.

    python examples/sb3_hover.py [--steps 40960] [--seed 0] [--envs 8] [--duration 0.2]

The policy commands the rotors and tendons directly (``quadarm/QuadArm-v0``, actions in
[-1, 1] mapped onto each actuator's range), from scratch, on short hovers (``--duration``,
default 0.2 s = 100 steps of 2 ms) whose airframe mass is drawn per episode (normal, 5 %
relative standard deviation), so that the episodes differ and the evaluation's spread is not 0.
An episode's return is minus the square of its RMS position error in cm (docs/interfaces.md):
0 is a perfect hover. An untrained policy's action is about 0, half of each rotor's thrust
range (4 N of 8 N, 16 N against the 12.4 N weight of vehicle and arm), so it climbs at about
2.9 m/s^2: an RMS error of 2.6 cm over 0.2 s, a return of about -6.8 (65 cm and -4.2e3 over
1 s). What PPO can learn in a few minutes is the hover thrust (about -0.23 on each rotor);
stabilising the attitude over seconds from scratch takes orders of magnitude more steps.

It evaluates the untrained and the trained policy on the same 16 episodes (seeded,
deterministic actions), prints the mean return of the training episodes per rollout and the
training's environment-steps per second. Measured results: docs/interfaces.md.
"""

from __future__ import annotations

import argparse
import time

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

from quadarm.envs.sb3 import QuadArmSB3VecEnv

RANDOMIZE = {"airframe.mass": {"dist": "normal", "rel_std": 0.05}}
EPISODES = 16


class Curve(BaseCallback):
    """The mean return of the episodes that ended in each rollout (the stochastic policy that
    is trained, as VecMonitor records them)."""

    def __init__(self) -> None:
        super().__init__()
        self.points: list[tuple[int, float]] = []
        self.returns: list[float] = []

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "episode" in info:
                self.returns.append(float(info["episode"]["r"]))
        return True

    def _on_rollout_end(self) -> None:
        if self.returns:
            self.points.append((self.num_timesteps, sum(self.returns) / len(self.returns)))
        self.returns = []


def evaluate(model: PPO, venv: VecNormalize, seed: int) -> tuple[float, float]:
    """Mean and standard deviation of the return over EPISODES deterministic episodes."""
    venv.training, venv.norm_reward = False, False
    venv.seed(10_000 + seed)  # the same evaluation episodes before and after training
    mean, std = evaluate_policy(model, venv, n_eval_episodes=EPISODES)
    venv.training, venv.norm_reward = True, True
    return float(mean), float(std)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40_960)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--n-steps", type=int, default=128)
    parser.add_argument("--log-std", type=float, default=-1.0)
    parser.add_argument("--duration", type=float, default=0.2, help="episode length, s")
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the simulation takes the other core
    overrides = ["scenario=hover", f"scenario.duration={args.duration}"]
    venv = VecNormalize(VecMonitor(QuadArmSB3VecEnv(args.envs, overrides, randomize=RANDOMIZE,
                                                    nthread=2)))
    venv.seed(args.seed)
    model = PPO("MlpPolicy", venv, n_steps=args.n_steps, batch_size=args.batch,
                gamma=args.gamma, policy_kwargs={"log_std_init": args.log_std},
                seed=args.seed, verbose=0)
    before = evaluate(model, venv, args.seed)
    t0 = time.perf_counter()
    curve = Curve()
    model.learn(args.steps, callback=curve)
    wall = time.perf_counter() - t0
    after = evaluate(model, venv, args.seed)
    print(f"seed {args.seed}: return untrained {before[0]:.4g} +- {before[1]:.3g}, "
          f"after {model.num_timesteps} steps {after[0]:.4g} +- {after[1]:.3g} "
          f"({EPISODES} episodes each); training {wall:.0f} s, "
          f"{model.num_timesteps / wall:.0f} training steps/s")
    print("training episodes' mean return per rollout: "
          + ", ".join(f"{n}: {r:.4g}" for n, r in curve.points))


if __name__ == "__main__":
    main()
