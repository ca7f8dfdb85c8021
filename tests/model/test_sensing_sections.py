"""Sensing for any arm (issue 40, sections 1-3): the shape model read off a multi-section arm
(30 links whose odd links hinge y first, nine fixed tendons) against MuJoCo's own kinematics,
the encoders' noise on every tendon, the shape NEES of a consistent filter against its
chi-square law, and the calibrated three-section arm flying on its estimates."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from helpers import cfg_of, composed
from scipy import stats

from quadarm.model import build
from quadarm.sensing import armfilter, noise, shape
from quadarm.sensing import config as sc

V4 = "arm=ftdcr_v4_calibrated"


@pytest.fixture(scope="module")
def v4() -> tuple[mujoco.MjModel, np.ndarray, int]:
    cfg = composed(V4)
    built = build(cfg.airframe, cfg.arm, cfg.sim)
    return built.model, shape.shape_params(built.model), int(built.tip_site)


def test_the_shape_model_of_a_multi_section_arm_is_mujocos(v4) -> None:
    # Tendon lengths (fixed tendons: sum of coefficient x hinge angle) and the tip site, from
    # the chain of Rx Ry / Ry Rx link turns, against mj_forward at random bends.
    m, sp, tip = v4
    n = int(sp[shape.S_N])
    assert (n, shape.n_tendons(sp)) == (30, 9)
    assert shape.section_ends(sp) == [9, 19, 29]
    hq = shape.hinge_qpos(m, n)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(4)
    for _ in range(3):
        d.qpos[:] = m.qpos0
        d.qpos[hq] = rng.normal(0.0, 0.08, 2 * n)
        mujoco.mj_forward(m, d)
        work, out, pts = np.zeros(12 * n), np.zeros(shape.n_out(sp)), np.zeros((n, 3))
        shape.forward(sp, d.qpos[hq], work, out)
        shape.points(sp, work, pts)
        np.testing.assert_allclose(out[:9], d.ten_length, rtol=0, atol=1e-13)
        rot = d.xmat[1].reshape(3, 3)  # the vehicle's axes (level here)
        o0 = d.xpos[m.body("link0").id]
        np.testing.assert_allclose(pts[-1], rot.T @ (d.site_xpos[tip] - o0), atol=1e-13)


def test_section_profiles_bend_each_section_evenly(v4) -> None:
    # A section's coefficient is its total bend: equal hinge angles over its ten links, and the
    # nine tendons' lengths see exactly the three sections' bends (their rank).
    _, sp, _ = v4
    prof = shape.section_profiles(sp)
    assert prof.shape == (3, 30)
    np.testing.assert_allclose(prof.sum(axis=1), 1.0)
    np.testing.assert_array_equal(prof[1, 10:20], 0.1)
    c = np.array([0.2, -0.1, 0.05, 0.3, -0.4, 0.1])
    th = np.zeros(60)
    shape.hinges(shape.NO_TABLE, prof, c, th)
    np.testing.assert_allclose(th[0::2].reshape(3, 10).sum(axis=1), c[0::2])
    np.testing.assert_allclose(th[1::2].reshape(3, 10).sum(axis=1), c[1::2])
    # The fit recovers the sections' bends from the nine lengths alone (noise-free).
    work, out = np.zeros(360), np.zeros(12)
    shape.forward(sp, th, work, out)
    meas = np.zeros(2 * 9 + 6)
    meas[:9] = out[:9]
    est, th_est = np.zeros(6), np.zeros(60)
    shape.estimate(sp, shape.NO_TABLE, prof, meas, np.array([1e4, 0.0]), 3, est, th_est, work,
                   np.zeros(shape.scratch_size(3, tendons=9)))
    np.testing.assert_allclose(est, c, atol=1e-9)


def test_encoder_noise_on_every_tendon_matches_its_sigma() -> None:
    cfg = sc.preset("realistic")
    cfg.encoder.noise, cfg.encoder.bias = 2e-5, 1e-4
    ch = noise.draw(cfg, 3, 40.0, 0.002, 9)["encoder"]
    assert ch.white.shape[1] == 9
    np.testing.assert_allclose(ch.white.std(axis=0), cfg.encoder.noise, rtol=0.03)
    b0 = np.array([noise.draw(cfg, s, 0.01, 0.002, 9)["encoder"].bias[0] for s in range(300)])
    np.testing.assert_allclose(b0.std(axis=0), cfg.encoder.bias, rtol=0.2)
    # The other sensors draw what they draw on a three-tendon arm.
    three, nine = noise.draw(cfg, 3, 1.0, 0.002), noise.draw(cfg, 3, 1.0, 0.002, 9)
    for name in ("imu", "position", "force_torque", "tip"):
        np.testing.assert_array_equal(three[name].white, nine[name].white)


def test_a_consistent_filter_has_the_chi_square_nees() -> None:
    # The filter's own predict and scalar updates on a linear system whose noises it knows:
    # the error's NEES over independent runs has the chi-square mean of its dof; and the tip
    # NEES (armfilter.tip_stats, 2 dof across the arm) of errors drawn from the tip covariance
    # has the chi-square(2) law.
    rng = np.random.default_rng(11)
    nx, nz, runs, steps = 4, 3, 200, 12
    fm = np.eye(nx) + 0.01 * rng.normal(size=(nx, nx))
    lq = 0.05 * rng.normal(size=(nx, nx))
    qm = lq @ lq.T + 1e-3 * np.eye(nx)
    hm = rng.normal(size=(nz, nx))
    af = np.zeros(armfilter.N_AF)
    af[armfilter.F_NT], af[armfilter.F_RENC] = nz, 0.04
    gm = np.zeros((nx, armfilter.N_U))
    nees, chol = np.zeros(runs), np.linalg.cholesky(qm)
    for r in range(runs):
        x_true = rng.normal(size=nx)
        x, p = np.zeros(nx), np.eye(nx).ravel().copy()
        for _ in range(steps):
            x_true = fm @ x_true + chol @ rng.normal(size=nx)
            armfilter.predict(x, p, fm, gm, qm, np.zeros(armfilter.N_U),
                              np.zeros(nx * nx + nx))
            z = hm @ x_true + rng.normal(0.0, 0.2, nz)
            armfilter.update(x, p, z, hm @ x, hm, af, np.zeros(nx), np.zeros(nx))
        e = x_true - x
        nees[r] = e @ np.linalg.solve(p.reshape(nx, nx), e)
    lo, hi = (stats.chi2.ppf(q, nx * runs) / runs for q in (0.0005, 0.9995))
    assert lo <= nees.mean() <= hi, (nees.mean(), lo, hi)
    tipc = rng.normal(size=(3, 3)) * 0.01
    pc = np.eye(nx)
    pc[:3, :3] = np.diag([1.0, 2.0, 0.5])
    s = tipc.T @ pc[:3, :3] @ tipc
    est = np.array([0.05, -0.02, -0.4])
    out, vals = np.zeros(armfilter.N_TIPLOG), []
    for e in rng.multivariate_normal(np.zeros(3), s, size=1000):
        armfilter.tip_stats(pc.ravel(), tipc, 3, est, est - e, out)
        vals.append(out[6])
    assert stats.kstest(vals, "chi2", args=(2,)).pvalue > 1e-3


@pytest.mark.slow
def test_the_calibrated_three_section_arm_flies_on_its_estimates() -> None:
    # Short hover of the 30-link arm on realistic_arm (two arm IMUs, nine tendon encoders):
    # the estimated tip stays within 3 % of L of the true one (RMS) and the EKF keeps the
    # vehicle within millimetres.
    from quadarm.runner import episode

    cfg = cfg_of(V4, "sensing=realistic_arm", "scenario=hover", "scenario.duration=2.0")
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    metrics = {(p, k): v for p, k, v in ep.metrics}
    assert metrics[("whole", "shape_tip_rms_pct")] <= 3.0
    assert metrics[("whole", "est_pos_rms_mm")] <= 5.0
    assert math.isfinite(metrics[("whole", "shape_nees_mean")])


@pytest.mark.slow
def test_compiled_equals_plain_on_a_multi_section_arm() -> None:
    # The sensing term's per-step code for nine fixed tendons and the y-first hinges: numba and
    # plain Python give the same numbers bit for bit.
    from quadarm.runner import episode, jit

    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    over = (V4, "sensing=realistic_arm", "scenario=hover", "scenario.duration=0.4", "seed=2")
    plain = episode.run_episode(cfg_of(*over, "runner.compiled=false"))
    comp = episode.run_episode(cfg_of(*over, "runner.compiled=true"))
    for name in ("qpos", "qvel", "ctrl", "est"):
        a, b = getattr(plain.log, name), getattr(comp.log, name)
        assert np.array_equal(a, b, equal_nan=True), name


def test_the_encoder_fit_of_a_multi_section_arm_holds_every_coefficient() -> None:
    # Under sensing=realistic (encoders, no arm IMUs) the arm's shape is the quasi-static fit
    # of two coefficients per section profile (six for the three sections). Plain Python
    # checks every index; a state sized for prb12's one bend (two) overran it, and the
    # compiled loop wrote past it (a segfault in the task suite). A short hover: the fit
    # holds the tip within 3 % of L.
    from quadarm.runner import episode

    cfg = cfg_of(V4, "sensing=realistic", "scenario=hover", "scenario.duration=0.2",
                 "runner.compiled=false")
    ep = episode.run_episode(cfg)
    assert ep.status == "ok", ep.message
    metrics = {(p, k): v for p, k, v in ep.metrics}
    assert metrics[("whole", "shape_tip_rms_pct")] <= 3.0


def test_a_servo_arms_swing_model_is_the_ideal_servos() -> None:
    # With arm.servo the horn's commanded travel is MuJoCo's integrator state (act) and ctrl is
    # its rate: the swing model's linearisation puts the horn at rest at its travel
    # (sections.hold), where it pulls as the ideal position servo does, so the modes, their
    # stiffness and their forcing are the ideal servo's. (Setting the travel as ctrl left the
    # horns at zero travel, the tendons without their pretension.)
    from quadarm.scenarios import drive

    out = []
    for extra in ((), ("arm.servo={speed:6.0,spool_radius:0.01}",)):
        cfg = composed(V4, *extra)
        fixed = build(cfg.airframe, cfg.arm, cfg.sim, fixed_base=True)
        ctrl = np.zeros(fixed.model.nu)
        ctrl[fixed.tendon_actuators] = drive.bend_rows(cfg, fixed, 0.0, 0.0)
        assert np.abs(ctrl).max() > 0.0  # the pretension travel: a horn at 0 would differ
        out.append(armfilter.swing_model(fixed.model, 2, ctrl))
    for a, b in zip(*out, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)
