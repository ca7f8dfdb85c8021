"""Quasi-static replay of tendon commands on the MuJoCo arm: the settled pose of every row.

The commands are what the arm's actuation says (``arm.actuation``): servo travels (m, the
tendons' position actuators) for ``displacement``, tendon tensions (N, the tendons' force
actuators, whose force is the command whatever the pose) for ``tension``.

Each row of a recording is a settled pose, so the replay solves MuJoCo's static equilibrium
for it instead of integrating the motion in between: the residual is MuJoCo's own generalised
force at rest, r(q) = qfrc_passive + qfrc_actuator - qfrc_bias (hinge springs, the tendons'
position actuators with their force limits, gravity), evaluated by ``mj_forward`` with
qvel = 0; Newton steps solve H dq = r with H = K + sum over taut tendons of k_i J_i^T J_i
(the hinge stiffness and the tendons' stiffness through their moment arms, J the fixed
tendons' coefficients; gravity's small stiffness is left out of H, which only slows the
convergence). A tension arm's force actuators hold their force whatever the tendon's length,
so no tendon counts as taut; its H is the tangent on the straight arm, gravity's stiffness
included (:meth:`Bench._rest_tangent`). Every row starts from the previous row's pose, as the
robot does.

Hysteresis in the replay: Coulomb friction F on a tendon driven through stiffness k makes the
tendon's settled pull lag its command by F / k either way (the closed form of
``tests/model/test_sections.py``'s dynamic loop), i.e. a play operator of width 2 F / k on the
command; the servo's ``backlash`` adds its own width (:func:`quadarm.model.sections.play`).

Capstan friction (``arm.tendon_capstan_mu`` mu > 0): a tendon rubbing on the spacers of a bent
arm loses tension as exp(-mu wrap) along its path while its servo pulls, and gains it back as
exp(+mu wrap) while the servo releases (the friction then holds the bend), wrap being the
angle it has turned round the spacers so far (:func:`quadarm.model.sections.capstan_wrap`).
The replay scales each tendon's generalised force on each hinge by that ratio at the hinge's
link, the servo's spring setting the tension at the proximal end; the direction of each
tendon comes from its servo's command history
(:func:`quadarm.model.sections.capstan_direction`). MuJoCo's own tendon cannot carry a
tension that varies along it, so flight runs without this term (``docs/arm.md``).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
from numpy.linalg import _umath_linalg

from quadarm.config import AirframeConfig, SimConfig
from quadarm.config.sections import SectionArmConfig
from quadarm.model import names, sections
from quadarm.model.builder import build, mount_point
from quadarm.names import link_joint

# A servo's command must leave a play this wide (m) before the capstan friction turns: a few
# of the FTDCR v4 servos' encoder steps (0.015 mm), so that jitter at rest does not flip it.
CAPSTAN_BAND = 1e-4
# The same for a tension command (N): a load cell's jitter at rest, a few mN.
CAPSTAN_BAND_N = 5e-3
# Hinge friction (arm.joint_friction) in the replay: a hinge whose load stays below the
# friction moves by at most about this much (rad) from where the previous row left it.
JOINT_FRICTION_EPS = 5e-5


class Bench:
    """A sectioned arm on a fixed base (the airframe welded to the world), pointing ``down``
    (hanging, as under a vehicle) or ``up`` (gravity reversed in the arm's frame, which is the
    arm standing on a bench). ``marker_offset`` (m): the tracked point's distance beyond the
    tip ball's centre along the distal link's axis. ``down`` (3,): gravity's direction in the
    arm's base frame (z from the tip towards the base, the arm hanging along -z), a unit
    vector that replaces ``pointing``'s (0, 0, +-1) when given (``identify.gravity =
    tracking_frame``: an arm mounted off the vertical); the magnitude stays ``sim.gravity``'s.

    ``fast`` (default): :meth:`residual` takes two shortcuts that leave every number bit for
    bit as MuJoCo's own stages give it (``tests/model/test_identify.py``): fixed tendons'
    lengths as the sequential sum MuJoCo forms (their Jacobian, the coefficients, is constant,
    so ``mj_tendon`` runs once, at construction), and ``mj_passive`` without the fluid forces
    when there is no wind (at rest they are zero). False: MuJoCo's stages at every
    evaluation, the reference."""

    def __init__(self, frame: AirframeConfig, arm: SectionArmConfig, sim: SimConfig,
                 pointing: str = "up", marker_offset: float = 0.0,
                 down: np.ndarray | None = None, fast: bool = True) -> None:
        if arm.actuation not in ("displacement", "tension"):
            raise ValueError("the replay drives servo travels or tendon tensions: "
                             "arm.actuation must be displacement or tension")
        if arm.servo is not None:
            raise ValueError("the replay solves settled poses of ideal servos: arm.servo must "
                             "be null")
        self.arm = arm
        self.built = build(frame, arm, sim, fixed_base=True)
        m = self.built.model
        self.model, self.data = m, mujoco.MjData(m)
        if down is not None:
            unit = np.asarray(down, dtype=float) / float(np.linalg.norm(down))
            m.opt.gravity[:] = float(np.linalg.norm(m.opt.gravity)) * unit
        elif pointing == "up":
            m.opt.gravity[:] = -np.asarray(m.opt.gravity)
        self.marker_offset = marker_offset
        self.acts = self.built.tendon_actuators
        self.tip_body = m.body(names.TIP_BODY).id
        quad = self.data.xpos[m.body(names.QUAD_BODY).id]
        mujoco.mj_forward(m, self.data)
        self.base = np.asarray(quad) + np.asarray(mount_point(frame))
        self.k = sections.tendon_stiffness(arm)
        self.t_max = arm.tension_max
        # The tendons' moment arms (n_tendons, nv): exact and constant for fixed tendons, the
        # straight arm's for site-routed ones.
        d = self.data
        d.qpos[:] = m.qpos0
        mujoco.mj_forward(m, d)
        j = np.zeros((m.ntendon, m.nv))
        eps = 1e-7
        for v in range(m.nv):
            d.qpos[:] = m.qpos0
            d.qpos[v] += eps
            mujoco.mj_fwdPosition(m, d)
            j[:, v] = (d.ten_length - m.tendon_length0) / eps
        self.jac = j[m.actuator_trnid[self.acts, 0]]
        self.stiff = np.diag(m.jnt_stiffness[m.dof_jntid].astype(float))
        d.qpos[:] = m.qpos0
        mujoco.mj_forward(m, d)
        self._bias = np.zeros(m.nv)
        self.fast = fast
        # Fixed tendons (every wrap a joint): their lengths as MuJoCo sums them, in the same
        # order (0 + c_0 q_0 + c_1 q_1 + ..., each product rounded, then each sum), so equal
        # to the bit; their Jacobian (the coefficients) is what mj_forward left in ten_J.
        self._fixed = bool(fast and m.ntendon and m.nwrap
                           and np.all(m.wrap_type == mujoco.mjtWrap.mjWRAP_JOINT))
        if self._fixed:
            num, adr = m.tendon_num, m.tendon_adr
            width = int(num.max())
            qadr = np.zeros((width, m.ntendon), dtype=int)
            coef = np.zeros((width, m.ntendon))
            for t in range(m.ntendon):
                span = slice(adr[t], adr[t] + num[t])
                qadr[:num[t], t] = m.jnt_qposadr[m.wrap_objid[span]]
                coef[:num[t], t] = m.wrap_prm[span]
            self._ten_qadr, self._ten_coef = qadr, coef
            self._ten_last, self._ten_index = num - 1, np.arange(m.ntendon)
            self._ten_buf = np.empty_like(coef)
        # The Newton matrix's tendon part per set of taut tendons (the same set gives the same
        # matrix, so it is formed once).
        self._taut_h: dict[bytes, np.ndarray] = {}
        self.mu = float(arm.tendon_capstan_mu)
        self.direction = np.ones(len(self.acts))
        self.yield_kappa = float(arm.bend_yield_curvature)
        if self.yield_kappa > 0:
            # Each link's two bending dofs, its hinges' stiffness EI / l and its length.
            lay = sections.layout(arm)
            self._yield_dofs = np.array([[m.jnt_dofadr[m.joint(link_joint(k, a)).id]
                                          for a in "xy"] for k in range(arm.segments)])
            self._yield_k = np.array([arm.sections[j].ei / ell for j, ell in
                                      zip(lay.section_of_link, lay.link_lengths, strict=True)])
            self._yield_theta = self.yield_kappa * np.asarray(lay.link_lengths)
        if self.mu > 0:
            # The dofs of each link's two bending hinges, and the link of every dof.
            n_links = arm.segments
            self._bend_dofs = np.array([[m.jnt_dofadr[m.joint(link_joint(k, a)).id]
                                         for a in "xy"] for k in range(n_links)])
            self._link_of_dof = np.zeros(m.nv, dtype=int)
            for k in range(n_links):
                for a in "xyz" if arm.torsion else "xy":
                    self._link_of_dof[m.jnt_dofadr[m.joint(link_joint(k, a)).id]] = k
            self._tendons = m.actuator_trnid[self.acts, 0]
            self._dense = np.zeros((m.ntendon, m.nv))
        # A tension arm's Newton matrix: the tangent of the force at rest on the straight arm,
        # slack (gravity's stiffness included). Its force actuators add no stiffness, so K
        # alone leaves gravity's softening out, and on an upright arm near its buckling load
        # (the recovery suite's: the weight half the critical one) Newton's steps then
        # converge by a factor 0.7 a step and every row stopped at the 40-evaluation cap.
        # Kept only when positive definite (an arm that folds under gravity keeps K).
        self._h_rest: np.ndarray | None = None
        if self.tension:
            h = self._rest_tangent()
            try:
                np.linalg.cholesky(h)
                self._h_rest = h
            except np.linalg.LinAlgError:
                self._h_rest = None

    @property
    def tension(self) -> bool:
        """Whether the commands are tendon tensions (N; ``arm.actuation=tension``), not servo
        travels (m)."""
        return self.arm.actuation == "tension"

    def commands(self, pull: np.ndarray) -> np.ndarray:
        """The actuators' commands (K, n_tendons) for pulls (K, n_tendons): servo travels (m)
        through the play operator of width backlash + 2 F / k to the position actuators'
        length commands; or, on a tension arm, tendon tensions (N) through a play of width
        2 F (the tendon's Coulomb friction F, N, holds its tension within F of the command
        either way; a servo's ``backlash`` has no part in a force drive), clipped to the force
        actuators' range [0, ``tension_max``]."""
        if self.tension:
            tension = np.asarray(pull, dtype=float)
            width_n = 2.0 * self.arm.tendon_friction
            if width_n > 0:
                tension = np.column_stack([sections.play(tension[:, i:i + 1], width_n)[:, 0]
                                           for i in range(tension.shape[1])])
            return np.clip(tension, 0.0, self.t_max)
        width = self.arm.backlash + 2.0 * self.arm.tendon_friction / self.k
        pulled = np.asarray(pull, dtype=float)
        if np.any(width > 0):
            pulled = np.column_stack([sections.play(pulled[:, i:i + 1], float(width[i]))[:, 0]
                                      for i in range(pulled.shape[1])])
        return sections.displacement_ctrl(self.model, self.acts, self.arm, pulled)

    def _rest_tangent(self, eps: float = 1e-6) -> np.ndarray:
        """-d r / d q (nv, nv) at the straight arm with every command 0 (central differences
        of :meth:`residual`, step ``eps`` rad), made symmetric: the hinges' stiffness less
        gravity's on the straight arm."""
        m, d = self.model, self.data
        d.ctrl[self.acts] = 0.0
        h = np.zeros((m.nv, m.nv))
        for v in range(m.nv):
            d.qpos[:] = m.qpos0
            d.qpos[v] += eps
            up = self.residual().copy()
            d.qpos[v] -= 2 * eps
            h[:, v] = (self.residual() - up) / (2 * eps)
        d.qpos[:] = m.qpos0
        return 0.5 * (h + h.T)

    def residual(self) -> np.ndarray:
        """MuJoCo's generalised force at rest (nv,) at the current pose: the stages of
        ``mj_forward`` that it needs (positions, tendons, actuators, springs, gravity)."""
        m, d = self.model, self.data
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        if self._fixed:
            # mj_tendon's lengths, summed in its order (see __init__).
            buf = self._ten_buf
            np.multiply(self._ten_coef, d.qpos[self._ten_qadr], out=buf)
            np.add.accumulate(buf, axis=0, out=buf)
            d.ten_length[:] = buf[self._ten_last, self._ten_index]
        else:
            mujoco.mj_tendon(m, d)
        mujoco.mj_transmission(m, d)
        mujoco.mj_fwdActuation(m, d)
        opt = m.opt
        if self.fast and (opt.density or opt.viscosity) and not opt.wind.any():
            # The fluid forces at rest in still air are zero: skip them (the model keeps its
            # fluid for MuJoCo's own steps, e.g. trust.sag).
            density, viscosity = opt.density, opt.viscosity
            opt.density = opt.viscosity = 0.0
            try:
                mujoco.mj_passive(m, d)
            finally:
                opt.density, opt.viscosity = density, viscosity
        else:
            mujoco.mj_passive(m, d)
        mujoco.mj_rne(m, d, 0, self._bias)
        r = d.qfrc_passive + d.qfrc_actuator - self._bias
        if self.mu > 0:
            r = r + self._capstan()
        if self.yield_kappa > 0:
            r = r + self._yield()
        return r

    def _yield(self, tangent: bool = False) -> np.ndarray:
        """The change (nv,) the bilinear bending spring (``arm.bend_yield_curvature``,
        ``bend_yield_ratio``) makes to the hinges' linear spring force: a link bent by
        theta = |(theta_x, theta_y)| beyond theta_y = kappa_y l carries the moment
        (EI / l) (theta_y + s (theta - theta_y)) along its bend instead of (EI / l) theta,
        i.e. the extra force +(EI / l)(1 - s)(theta - theta_y) theta_i / theta on each of its
        two dofs (less restoring force for s < 1). ``tangent``: the secant stiffness's change
        (nv,) instead, the diagonal the Newton steps add."""
        q = self.data.qpos
        out = np.zeros(self.model.nv)
        qx, qy = q[self._yield_dofs[:, 0]], q[self._yield_dofs[:, 1]]
        theta = np.hypot(qx, qy)
        over = theta > self._yield_theta
        if not np.any(over):
            return out
        s = float(self.arm.bend_yield_ratio)
        excess = (1.0 - s) * (theta[over] - self._yield_theta[over]) / theta[over]
        k = self._yield_k[over]
        dofs = self._yield_dofs[over]
        if tangent:
            out[dofs[:, 0]] = out[dofs[:, 1]] = -k * excess
            return out
        out[dofs[:, 0]] = k * excess * qx[over]
        out[dofs[:, 1]] = k * excess * qy[over]
        return out

    def _capstan(self) -> np.ndarray:
        """The change (nv,) the capstan friction makes to the tendons' generalised force:
        sum over tendons of f_i J_i (w_i - 1), w_i the tension ratio at each dof's link."""
        m, d = self.model, self.data
        if self.arm.tendon_routing == "joints":
            jac = self.jac
        else:
            mujoco.mju_sparse2dense(self._dense, d.ten_J, m.ten_J_rownnz, m.ten_J_rowadr,
                                    m.ten_J_colind)
            jac = self._dense[self._tendons]
        q = d.qpos
        wrap = sections.capstan_wrap(np.hypot(q[self._bend_dofs[:, 0]],
                                              q[self._bend_dofs[:, 1]]))
        ratio = sections.capstan_factor(wrap[None, :], self.mu, self.direction[:, None])
        # The tendon's force along its length: the actuator's force times its gear (+1 for
        # the position actuators, -1 for a tension arm's, whose positive force pulls).
        f = d.actuator_force[self.acts] * m.actuator_gear[self.acts, 0]
        return (f[:, None] * jac * (ratio[:, self._link_of_dof] - 1.0)).sum(axis=0)

    def directions(self, pull: np.ndarray) -> np.ndarray:
        """Each tendon's capstan direction (K, n_tendons), +1 pulling, -1 releasing, for the
        pulls (K, n_tendons) m, or tensions N on a tension arm
        (:func:`quadarm.model.sections.capstan_direction`)."""
        return sections.capstan_direction(pull, CAPSTAN_BAND_N if self.tension
                                          else CAPSTAN_BAND)

    def settle(self, ctrl: np.ndarray, iterations: int = 40, tol: float = 1e-9,
               direction: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """Solve the static equilibrium for one row of commands from the current pose
        (``direction``: the tendons' capstan directions (n_tendons,), with a capstan mu);
        returns the marker (3,) in the arm's base frame (m; z along the base's axis, the arm
        hanging along -z) and the residual evaluations taken. Newton steps with a
        backtracking line search on |r| (the taut set of the tendons changes the Hessian
        piecewise, and a full step can cycle between two sets)."""
        d = self.data
        if direction is not None:
            self.direction = np.asarray(direction, dtype=float)
        d.ctrl[self.acts] = ctrl
        d.qvel[:] = 0.0
        fj = self.arm.joint_friction
        start = d.qpos.copy()

        def force() -> np.ndarray:
            # With hinge friction F, the friction's force -F tanh(dq / eps) opposes each
            # hinge's move from the previous row's pose (the stick-slip of Coulomb friction,
            # smoothed over JOINT_FRICTION_EPS so that Newton's steps stay smooth).
            r = self.residual()
            if fj > 0:
                r = r - fj * np.tanh((d.qpos - start) / JOINT_FRICTION_EPS)
            return r

        r = force()
        norm = _norm(r)
        evals = 1
        while evals < iterations and norm > tol:
            f = d.actuator_force[self.acts]
            taut = (f < 0.0) & (f > -self.t_max)
            h = self._h_rest if self._h_rest is not None else self._tendon_h(taut)
            if self.yield_kappa > 0 or fj > 0:
                # The diagonal terms, added to the diagonal alone (adding zeros elsewhere, as
                # h + diag(v) does, changes no bit).
                h = h.copy()
                dia = np.einsum("ii->i", h)
                if self.yield_kappa > 0:
                    dia += self._yield(tangent=True)
                if fj > 0:
                    slope = 1.0 - np.tanh((d.qpos - start) / JOINT_FRICTION_EPS) ** 2
                    dia += fj / JOINT_FRICTION_EPS * slope
            dq = _solve(h, r)
            q0 = d.qpos.copy()
            alpha = 1.0
            while True:
                d.qpos[:] = q0 + alpha * dq
                r = force()
                evals += 1
                new = _norm(r)
                if new < norm or alpha < 1e-3 or evals >= iterations:
                    break
                alpha *= 0.5
            norm = new
            if float(np.max(np.abs(alpha * dq))) < 1e-12:
                break
        return self.marker(), evals

    def _tendon_h(self, taut: np.ndarray) -> np.ndarray:
        """K + sum over the taut tendons of k_i J_i^T J_i (nv, nv), formed once per taut set
        (``taut`` (n_tendons,) bool); the caller must not change it in place."""
        key = taut.tobytes()
        h = self._taut_h.get(key)
        if h is None:
            h = self._taut_h[key] = self.stiff + (self.jac[taut].T * self.k[taut]) @ self.jac[taut]
        return h

    def marker(self) -> np.ndarray:
        """The tracked point (3,) in the arm's base frame, m."""
        d = self.data
        p = d.xpos[self.tip_body] - d.xmat[self.tip_body].reshape(3, 3)[:, 2] * self.marker_offset
        return p - self.base

    def replay(self, pull: np.ndarray) -> np.ndarray:
        """The markers (K, 3), m, base frame, for the pulls (K, n_tendons) m, row by row from
        the straight arm."""
        self.data.qpos[:] = self.model.qpos0
        ctrl = self.commands(pull)
        way = self.directions(pull)
        out = np.empty((len(ctrl), 3))
        for i, u in enumerate(ctrl):
            out[i] = self.settle(u, direction=way[i])[0]
        return out


def _norm(r: np.ndarray) -> float:
    """|r| (1-D), as ``np.linalg.norm`` computes it (sqrt of the dot product), without its
    dispatch."""
    return math.sqrt(float(r.dot(r)))


def _raise_singular(err: str, flag: int) -> None:
    raise np.linalg.LinAlgError("Singular matrix")


def _solve(h: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``np.linalg.solve(h, r)`` for a real (n, n) ``h`` and (n,) ``r``: the same LAPACK call
    (numpy's gufunc, LU with partial pivoting) under the same error state, so the same bits,
    without the public function's argument checks and conversions."""
    with np.errstate(call=_raise_singular, invalid="call", over="ignore", divide="ignore",
                     under="ignore"):
        return _umath_linalg.solve1(h, r, signature="dd->d")
