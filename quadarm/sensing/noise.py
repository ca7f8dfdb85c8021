"""Every random number of a trial's sensors, drawn up front from the trial's seed.

``SeedSequence(seed).spawn(len(STREAMS))`` gives one independent stream per sensor (and one for
the estimator's initial error), in the fixed order of :data:`STREAMS`, so adding a sensor later
appends a stream and leaves the others' numbers unchanged. Each stream draws standard normals in
a fixed order (turn-on bias, white noise, bias increments) whatever the configured magnitudes,
which only scale them: two presets flown with the same seed see the same underlying draws
(common random numbers), and the per-step functions, in Python or compiled, only index arrays.

Discretisation (per sample, sample period T = period * timestep, rate f = 1 / T):
- white noise of density N: standard deviation N sqrt(f) (``docs/sensing.md``);
- bias: b_0 ~ N(0, bias^2), b_k = b_{k-1} + w_k with w_k ~ N(0, walk^2 T), so that the bias's
  variance grows as walk^2 t and its Allan deviation as walk sqrt(tau / 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quadarm.sensing.config import ArmImuConfig, ImuConfig, SensingConfig, period_of, steps_of
from quadarm.sensing.sensors import CH_CAP, CH_DELAY, CH_PERIOD, CH_RES, N_CHANNEL

STREAMS = ("imu", "position", "encoder", "force_torque", "tip", "estimator", "arm_imu")
DIMS = {"imu": 6, "position": 3, "encoder": 3, "force_torque": 6, "tip": 3}


@dataclass(frozen=True)
class Channel:
    """One sensor's pre-drawn errors and its delivery buffer.

    ``prm`` (N_CHANNEL,): period and delay (physics steps), ring capacity, quantum (m, 0 for
    none). ``white`` and ``bias`` (n_samples, dim): the additive errors of sample k (taken at
    physics step k * period). ``ring`` (capacity, dim): scratch for the samples in flight.
    """

    prm: np.ndarray
    white: np.ndarray
    bias: np.ndarray
    ring: np.ndarray

    @property
    def period(self) -> int:
        return int(self.prm[CH_PERIOD])

    @property
    def delay(self) -> int:
        return int(self.prm[CH_DELAY])


def _imu_sigmas(c: ImuConfig, period_s: float) -> tuple[np.ndarray, ...]:
    """An IMU's per-axis (white per sample, turn-on bias, walk per sample) standard deviations,
    gyro (3) then accelerometer (3)."""
    f = 1.0 / period_s
    root_t = math.sqrt(period_s)
    white = [c.gyro_noise * math.sqrt(f)] * 3 + [c.accel_noise * math.sqrt(f)] * 3
    bias = [c.gyro_bias] * 3 + [c.accel_bias] * 3
    walk = [c.gyro_walk * root_t] * 3 + [c.accel_walk * root_t] * 3
    return np.array(white), np.array(bias), np.array(walk)


def _sigmas(name: str, cfg: SensingConfig, period_s: float) -> tuple[np.ndarray, ...]:
    """Per-axis (white per sample, turn-on bias, walk per sample) standard deviations."""
    f = 1.0 / period_s
    root_t = math.sqrt(period_s)
    if name == "imu":
        c = cfg.imu
        white = [c.gyro_noise * math.sqrt(f)] * 3 + [c.accel_noise * math.sqrt(f)] * 3
        bias = [c.gyro_bias] * 3 + [c.accel_bias] * 3
        walk = [c.gyro_walk * root_t] * 3 + [c.accel_walk * root_t] * 3
    elif name == "position":
        p = cfg.position
        white, bias, walk = [p.noise] * 3, [p.bias] * 3, [p.walk * root_t] * 3
    elif name == "encoder":
        e = cfg.encoder
        white, bias, walk = [e.noise], [e.bias], [0.0]  # the same for every tendon
    elif name == "force_torque":
        t = cfg.force_torque
        white = [t.force_noise] * 3 + [t.torque_noise] * 3
        bias = [t.force_bias] * 3 + [t.torque_bias] * 3
        walk = [0.0] * 6
    else:
        white, bias, walk = [cfg.tip.noise] * 3, [0.0] * 3, [0.0] * 3
    return np.array(white), np.array(bias), np.array(walk)


def samples(duration: float, timestep: float, period: int) -> int:
    """Samples taken over a run of ``duration`` (s): at steps 0, period, ... up to the last."""
    return steps_of(duration, timestep) // period + 1


def draw(cfg: SensingConfig, seed: int, duration: float, timestep: float, n_tendons: int = 3
         ) -> dict[str, Channel]:
    """The channels of every sensor for one trial of ``duration`` (s) at ``timestep`` (s),
    on an arm of ``n_tendons`` tendons (one encoder each)."""
    streams = np.random.SeedSequence(seed).spawn(len(STREAMS))
    out: dict[str, Channel] = {}
    for (name, sensor), ss in zip(cfg.sensors().items(), streams, strict=False):
        dim = n_tendons if name == "encoder" else DIMS[name]
        period = period_of(sensor.rate, timestep)
        delay = steps_of(sensor.latency, timestep)
        n = samples(duration, timestep, period)
        out[name] = _channel(np.random.Generator(np.random.PCG64(ss)), dim, n,
                             _sigmas(name, cfg, period * timestep), period, delay,
                             cfg.encoder.resolution if name == "encoder" else 0.0)
    return out


def _channel(rng: np.random.Generator, dim: int, n: int, sigmas: tuple[np.ndarray, ...],
             period: int, delay: int, quantum: float) -> Channel:
    """Draw one channel: turn-on bias, white noise, then the bias increments, in that order."""
    white_s, bias_s, walk_s = sigmas
    b0 = rng.standard_normal(dim) * bias_s
    white = rng.standard_normal((n, dim)) * white_s
    steps = rng.standard_normal((n - 1, dim)) * walk_s
    bias = np.empty((n, dim))
    bias[0] = b0
    bias[1:] = b0 + np.cumsum(steps, axis=0)
    prm = np.zeros(N_CHANNEL)
    prm[CH_PERIOD], prm[CH_DELAY] = period, delay
    prm[CH_CAP] = delay // period + 1
    prm[CH_RES] = quantum
    return Channel(prm=prm, white=white, bias=bias, ring=np.zeros((int(prm[CH_CAP]), dim)))


def draw_arm(cfg: ArmImuConfig, seed: int, duration: float, timestep: float, n_imu: int
             ) -> Channel:
    """The arm IMUs' channel (one rate and latency for all): ``n_imu`` IMUs of 6 axes each
    (gyro, accelerometer), their own stream (the last of :data:`STREAMS`, so the other
    sensors' numbers are those of a trial without arm IMUs)."""
    ss = np.random.SeedSequence(seed).spawn(len(STREAMS))[STREAMS.index("arm_imu")]
    rng = np.random.Generator(np.random.PCG64(ss))
    period = period_of(cfg.rate, timestep)
    n = samples(duration, timestep, period)
    white, bias, walk = _imu_sigmas(cfg, period * timestep)
    sig = (np.tile(white, n_imu), np.tile(bias, n_imu), np.tile(walk, n_imu))
    return _channel(rng, 6 * n_imu, n, sig, period, steps_of(cfg.latency, timestep), 0.0)


def estimator_stream(seed: int) -> np.random.Generator:
    """The estimator's own stream (its initial-error draw), the last of :data:`STREAMS`."""
    ss = np.random.SeedSequence(seed).spawn(len(STREAMS))[STREAMS.index("estimator")]
    return np.random.Generator(np.random.PCG64(ss))
