"""The servo model's per-step term (``arm.servo``, :class:`quadarm.config.sections.ServoConfig`;
``docs/arm.md``, "Servo model"): each servo's horn speed from its command, its position and its
load, on scalars, so that the step seam calls it in plain Python and compiled alike.

The horn is MuJoCo's state: each servo's tendon actuator has integrator dynamics
(:func:`quadarm.model.sections.add_actuators`), its activation ``act`` (m) is the length command
u the horn holds the tendon to (u = rest - lever theta, ``rest`` = L0 - T0 / k the command at
zero pull, ``lever`` = s r the tendon travel per horn radian, s the travel scale, r the spool
radius), its control is d act/dt (m/s). The term reads the plan's length command u_c from
``ctrl`` (the ideal servo's input, so the log of ``ctrl`` keeps the commands) and writes there
the speed of sample k:

- error e = theta_c - theta (rad), less the dead band: e - sign(e) b outside |e| <= b, 0 inside;
- load torque tau = lever T (N m), T the tension of the last step (-actuator_force, >= 0);
- a massless horn on a DC motor's torque-speed line at duty cycle
  d = clip((kp e - kd omega) / tau_s, -1, 1): omega = w0 (d - tau / tau_s). Unsaturated, the
  two give omega = w0 (kp e - tau) / (tau_s + w0 kd); saturated, omega = w0 (+-1 - tau / tau_s).

The unsaturated branch is a first-order approach to the horn's balance kp e = tau at the rate
lam = w0 (kp + lever^2 k) / (tau_s + w0 kd) (1/s, k the tendon's stiffness); one explicit step h
of it is stable only for h lam < 2, which a stiff loop breaks at the physics rate, so its speed
is scaled by (1 - exp(-h lam)) / (h lam): the exact step of that linear approach (the balance,
the equilibria and the saturated branch, the no-load speed, are unchanged).

At sample 0 the horn starts at rest at its command (act = u_c, no speed).

Antagonistic pairs (``sections.<j>.tendons.pairs``): one servo winds tendon i and unwinds its
opposite o: the first's command drives it, the load is lever_i T_i - lever_o T_o, and o's
activation moves opposite to i's (d act_o/dt = +lever_o omega), so o is paid out as far as i is
pulled; the loop's rate counts both tendons' stiffness.
"""

from __future__ import annotations

import math
from typing import Any

# The columns of a servo's parameter row (Params.servo.prm[i, tendon]).
S_ON = 0  # 1: this tendon's servo is modelled (0: ideal, its ctrl is left as it is)
S_REST = 1  # m: the length command at zero pull, L0 - T0 / k
S_LEVER = 2  # m/rad: tendon travel per horn radian, travel scale x spool radius
S_RADIUS = 3  # m: the spool radius r (the servo's travel is r theta, the command's unit)
S_STALL = 4  # N m: stall torque
S_SPEED = 5  # rad/s: no-load speed
S_KP = 6  # N m/rad: the position loop's stiffness
S_KD = 7  # N m s/rad: its damping
S_BAND = 8  # rad: the dead band's half-width
S_STIFF = 9  # N/m: the tendon's stiffness k (the loop's rate, see the module docstring)
S_PARTNER = 10  # an antagonistic pair's other tendon (index over the arm's tendons), -1: none
S_LEAD = 11  # 1: this tendon's command drives the servo (unpaired, or a pair's first); 0: the
#              pair's second, paid out by the first's servo (its own command is not read)
N_SERVO = 12

# The columns of a servo's log row (Log.servo[k, i, tendon]).
L_TRAVEL = 0  # m: the servo's travel r theta (the command's unit: the pull)
L_TORQUE = 1  # N m: the load torque on the horn, lever x tension (a pair: less the other's)
N_SERVO_LOG = 2


def horn_speed(e: float, load: float, stall: float, speed: float, kp: float, kd: float,
               rate_h: float) -> float:
    """The horn's speed (rad/s) for the loop error ``e`` (rad, after the dead band) and the
    load torque ``load`` (N m), the servo's ``stall`` torque (N m), no-load ``speed`` (rad/s),
    loop gains ``kp`` (N m/rad), ``kd`` (N m s/rad); ``rate_h`` = h lam, the unsaturated
    approach's rate times the step (see the module docstring; 0: no correction)."""
    w = speed * (kp * e - load) / (stall + speed * kd)
    duty = (kp * e - kd * w) / stall
    if duty > 1.0:
        return speed * (1.0 - load / stall)
    if duty < -1.0:
        return speed * (-1.0 - load / stall)
    if rate_h > 1e-9:
        w = w * (-math.expm1(-rate_h)) / rate_h
    return w


def servo_term(k: int, i: int, prm: Any, h: float, ctrl: Any, act: Any, force: Any,
               actuators: Any, adr: Any, log: Any) -> None:
    """Sample k of the servos of one simulation: ``prm`` (n_tendons, N_SERVO) their rows,
    ``h`` (s) the step, ``ctrl`` (nu,) the commands (the plan's length commands in; the horns'
    speeds, m/s, out), ``act`` (na,) MuJoCo's activations (the horns, m), ``force`` (nu,) N the
    last step's actuator forces, ``actuators`` (n_tendons,) the tendon actuators' ids, ``adr``
    (n_tendons,) their activations' addresses; the travels (m) into ``log[k, i]`` (``log``
    (K + 1, nsim, n_tendons, N_SERVO_LOG), or no rows: not logged)."""
    record = log.shape[0] > 0
    for j in range(actuators.shape[0]):
        s = prm[j]
        if s[S_ON] == 0.0:
            continue
        a, x = actuators[j], adr[j]
        lever = s[S_LEVER]
        o = int(s[S_PARTNER])
        if k == 0 and s[S_LEAD] != 0.0:
            act[x] = ctrl[a]  # the horn starts at rest at its first command
            if o >= 0:
                act[adr[o]] = ctrl[actuators[o]]
        theta = (s[S_REST] - act[x]) / lever
        if record:
            log[k, i, j, L_TRAVEL] = s[S_RADIUS] * theta
        if s[S_LEAD] == 0.0:
            continue  # a pair's second: its activation is the first's servo's
        if k == 0:
            ctrl[a] = 0.0
            if o >= 0:
                ctrl[actuators[o]] = 0.0
            continue
        e = (s[S_REST] - ctrl[a]) / lever - theta
        band = s[S_BAND]
        if e > band:
            e = e - band
        elif e < -band:
            e = e + band
        else:
            e = 0.0
        load = lever * max(0.0 - force[a], 0.0)
        stiff = lever * lever * s[S_STIFF]
        if o >= 0:
            po = prm[o]
            load = load - po[S_LEVER] * max(0.0 - force[actuators[o]], 0.0)
            stiff = stiff + po[S_LEVER] * po[S_LEVER] * po[S_STIFF]
        stall, speed, kp, kd = s[S_STALL], s[S_SPEED], s[S_KP], s[S_KD]
        rate_h = h * speed * (kp + stiff) / (stall + speed * kd)
        w = horn_speed(e, load, stall, speed, kp, kd, rate_h)
        ctrl[a] = 0.0 - lever * w
        if o >= 0:
            ctrl[actuators[o]] = prm[o, S_LEVER] * w
