"""Any airframe: the full inertia tensor and centre-of-mass offset of a YAML airframe, and a
vehicle read from an MJCF file (``airframe=mjcf``), attached with MjSpec.

The MJCF files are written by the tests (a small quadrotor laid out like MuJoCo Menagerie's
skydio_x2: rotor sites above the hub at two heights, a centre of mass above and behind the hub,
a product of inertia Ixz); nothing is fetched.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from quadarm.api import compose
from quadarm.config import ConfigError
from quadarm.model.allocation import allocation_matrix
from quadarm.model.builder import build

# Rotor sites (m, vehicle frame) in the X2's order, and the file's vehicle: a hub body with an
# explicit full inertia plus a welded battery body below it.
SITES = [(-0.14, -0.18, 0.05), (-0.14, 0.18, 0.05), (0.14, 0.18, 0.08), (0.14, -0.18, 0.08)]
KAPPA = 0.0201
CTRL_MAX = 13.0
HUB = dict(mass=0.9, pos=(-0.005, 0.0, 0.06), full=(0.005, 0.006, 0.009, 0.0, -0.0021, 0.0))
BATTERY = dict(mass=0.3, pos=(0.02, 0.01, -0.01), half=(0.04, 0.03, 0.01))
GOOD_SPINS = (1, -1, 1, -1)  # diagonal rotors share a spin
X2_SPINS = (-1, 1, 1, -1)  # Menagerie's stored file: yaw is a multiple of roll


def write_vehicle(path: Path, spins: tuple[int, ...] = GOOD_SPINS, n_rotors: int = 4,
                  inertial: str | None = None, mesh: bool = False) -> Path:
    hub = inertial or (f'<inertial pos="{" ".join(map(str, HUB["pos"]))}" mass="{HUB["mass"]}"'
                       f' fullinertia="{" ".join(map(str, HUB["full"]))}"/>')
    sites = "\n".join(f'      <site name="thrust{j + 1}" pos="{" ".join(map(str, p))}"/>'
                      for j, p in enumerate(SITES[:n_rotors]))
    motors = "\n".join(
        f'    <motor class="x2" name="thrust{j + 1}" site="thrust{j + 1}" '
        f'gear="0 0 1 0 0 {spins[j] * KAPPA}"/>' for j in range(n_rotors))
    bx, by, bz = BATTERY["pos"]
    compiler, asset, shell = '<compiler autolimits="true"/>', "", ""
    if mesh:  # a visual mesh in an assets folder beside the file, as Menagerie's X2 has
        (path.parent / "assets").mkdir(exist_ok=True)
        (path.parent / "assets" / "shell.obj").write_text(
            "v 0 0 0\nv .05 0 0\nv 0 .05 0\nv 0 0 .05\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
        compiler = '<compiler autolimits="true" meshdir="assets"/>'
        asset = '<asset><mesh name="shell" file="shell.obj"/></asset>'
        shell = '<geom type="mesh" mesh="shell" contype="0" conaffinity="0"/>'
    path.write_text(f"""<mujoco model="test x2">
  {compiler}
  {asset}
  <option timestep="0.01"/>
  <default>
    <default class="x2">
      <geom mass="0"/>
      <motor ctrlrange="0 {CTRL_MAX}"/>
    </default>
  </default>
  <worldbody>
    <light pos="0 0 3"/>
    <body name="x2" pos="0 0 0.1" childclass="x2">
      <freejoint/>
      {hub}
      <geom name="body" type="box" size=".06 .027 .02" pos=".04 0 .02"/>
      {shell}
      <geom name="arm1" type="capsule" fromto="0 0 .03 -.14 -.18 .05" size=".01"/>
      <site name="imu" pos="0 0 .02"/>
      <site name="arm_mount" pos="0.01 0 -0.02"/>
{sites}
      <body name="battery" pos="{bx} {by} {bz}">
        <geom type="box" size="{" ".join(map(str, BATTERY["half"]))}" mass="{BATTERY["mass"]}"/>
      </body>
    </body>
  </worldbody>
  <actuator>
{motors}
    <motor name="gimbal" site="imu" gear="1 0 0 0 0 0" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
""")
    return path


def expected_mass_properties() -> tuple[float, np.ndarray, np.ndarray]:
    """The vehicle's mass, centre of mass and inertia about it, by hand: the hub's given
    inertia plus the battery box's (m (b^2 + c^2) / 3 per axis for half sizes a, b, c), moved to
    the common centre of mass with the parallel-axis rule."""
    m1, c1 = HUB["mass"], np.array(HUB["pos"])
    ixx, iyy, izz, ixy, ixz, iyz = HUB["full"]
    i1 = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    m2, c2 = BATTERY["mass"], np.array(BATTERY["pos"])
    a, b, c = BATTERY["half"]
    i2 = np.diag([m2 * (b * b + c * c), m2 * (a * a + c * c), m2 * (a * a + b * b)]) / 3
    mass = m1 + m2
    com = (m1 * c1 + m2 * c2) / mass

    def shift(m: float, d: np.ndarray) -> np.ndarray:
        return m * (d @ d * np.eye(3) - np.outer(d, d))

    return mass, com, i1 + shift(m1, c1 - com) + i2 + shift(m2, c2 - com)


def closed_form_allocation(com: np.ndarray, spins: tuple[int, ...]) -> np.ndarray:
    """[f; tau] per newton of each rotor, about the centre of mass: thrust along z at site r_j
    gives tau = (r_j - c) x (0, 0, 1) + spin_j kappa (0, 0, 1)."""
    cols = [[1.0, (y - com[1]), -(x - com[0]), s * KAPPA]
            for (x, y, _), s in zip(SITES, spins, strict=True)]
    return np.array(cols).T


def mjcf_overrides(path: Path, *more: str) -> list[str]:
    return ["airframe=mjcf", f"airframe.file={path}", "airframe.body=x2", *more]


def test_the_file_gives_mass_inertia_and_rotors(tmp_path: Path) -> None:
    cfg = compose(mjcf_overrides(write_vehicle(tmp_path / "x2.xml"), "scenario=hover"))
    mass, com, inertia = expected_mass_properties()
    frame = cfg.airframe
    assert frame.mass == pytest.approx(mass, rel=1e-12)
    np.testing.assert_allclose(frame.com, com, rtol=0, atol=1e-12)
    ixx, iyy, izz, ixy, ixz, iyz = frame.inertia
    np.testing.assert_allclose([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], inertia,
                               rtol=1e-9, atol=1e-12)
    assert [r.spin for r in frame.rotors] == list(GOOD_SPINS)  # the gimbal motor is no rotor
    np.testing.assert_allclose([r.pos for r in frame.rotors], [p[:2] for p in SITES])
    assert frame.kappa == pytest.approx(KAPPA, rel=1e-12)
    assert frame.thrust_max == CTRL_MAX
    assert Path(frame.file or "").is_absolute()


def test_compiled_allocation_equals_the_closed_form(tmp_path: Path) -> None:
    cfg = compose(mjcf_overrides(write_vehicle(tmp_path / "x2.xml"), "scenario=hover"))
    built = build(cfg.airframe, cfg.arm, cfg.sim)
    m = built.model
    q = built.quad_body
    mass, com, inertia = expected_mass_properties()
    # The hub's body carries the whole vehicle's mass and inertia; the attached bodies none.
    assert m.body_mass[q] == pytest.approx(mass, rel=1e-12)
    np.testing.assert_allclose(m.body_ipos[q], com, atol=1e-12)
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, m.body_iquat[q])
    r = rot.reshape(3, 3)
    np.testing.assert_allclose(r @ np.diag(m.body_inertia[q]) @ r.T, inertia, atol=1e-10)
    attached = [b for b in range(m.nbody) if m.body(b).name.startswith("airframe/")]
    assert len(attached) == 2 and all(m.body_mass[b] == 0 for b in attached)
    np.testing.assert_allclose(allocation_matrix(m), closed_form_allocation(com, GOOD_SPINS),
                               rtol=0, atol=1e-14)
    # The file's geoms came along (its vehicle is what collides and is drawn), its motors not.
    assert m.geom("airframe/body").bodyid == attached[0]
    assert len(built.rotor_actuators) == 4 and m.nu == 4 + 3
    # The arm hangs flange_depth below the centre of mass.
    np.testing.assert_allclose(m.body_pos[built.link_bodies[0]],
                               com - [0.0, 0.0, cfg.airframe.flange_depth], atol=1e-12)


def test_model_xml_of_a_mesh_vehicle_loads_anywhere(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The run folder's model.xml names the file's meshes by absolute path: it loads in plain
    MuJoCo from any folder, as quadarm's own models do."""
    cfg = compose(mjcf_overrides(write_vehicle(tmp_path / "x2.xml", mesh=True), "scenario=hover"))
    built = build(cfg.airframe, cfg.arm, cfg.sim)
    monkeypatch.chdir(tmp_path.parent)
    again = mujoco.MjModel.from_xml_string(built.xml())
    assert again.nmesh == 1 and again.nbody == built.model.nbody


def test_mount_site_places_the_arm(tmp_path: Path) -> None:
    cfg = compose(mjcf_overrides(write_vehicle(tmp_path / "x2.xml"), "airframe.mount=arm_mount",
                              "scenario=hover"))
    built = build(cfg.airframe, cfg.arm, cfg.sim)
    np.testing.assert_allclose(built.model.body_pos[built.link_bodies[0]], [0.01, 0.0, -0.02],
                               atol=1e-12)


def test_yaml_full_inertia_and_com_keep_the_allocation_exact() -> None:
    """A YAML airframe with products of inertia and its centre of mass off the hub: the model
    holds that tensor, and the allocation about the centre of mass is the closed form."""
    full = [7.0e-3, 8.0e-3, 13.0e-3, 0.4e-3, -2.1e-3, 0.2e-3]
    com = [0.01, -0.02, 0.054]
    cfg = compose(["scenario=hover", f"airframe.inertia={full}", f"airframe.com={com}"])
    built = build(cfg.airframe, cfg.arm, cfg.sim)
    m, q = built.model, built.quad_body
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, m.body_iquat[q])
    r = rot.reshape(3, 3)
    ixx, iyy, izz, ixy, ixz, iyz = full
    np.testing.assert_allclose(r @ np.diag(m.body_inertia[q]) @ r.T,
                               [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], atol=1e-12)
    np.testing.assert_allclose(m.body_ipos[q], com, atol=0)
    cols = [[1.0, ro.pos[1] - com[1], -(ro.pos[0] - com[0]), ro.spin * cfg.airframe.kappa]
            for ro in cfg.airframe.rotors]
    np.testing.assert_allclose(allocation_matrix(m), np.array(cols).T, rtol=0, atol=1e-15)


def test_default_airframe_model_is_unchanged() -> None:
    """The paper's airframe (3 principal moments, com at the hub) compiles as before: diagonal
    inertia written as such, centre of mass exactly at the hub, no attached bodies."""
    cfg = compose(["scenario=hover"])
    built = build(cfg.airframe, cfg.arm, cfg.sim)
    m, q = built.model, built.quad_body
    assert "fullinertia" not in built.xml()
    assert m.body_ipos[q].tolist() == [0.0, 0.0, 0.0]
    assert m.body_iquat[q].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert m.body_inertia[q].tolist() == list(cfg.airframe.inertia)
    assert not [b for b in range(m.nbody) if m.body(b).name.startswith("airframe/")]


@pytest.mark.slow
def test_mjcf_vehicle_flies_the_mission(tmp_path: Path) -> None:
    from quadarm.runner.study import run

    cfg = compose(mjcf_overrides(write_vehicle(tmp_path / "x2.xml"), "scenario=mission"))
    result = run(cfg, tmp_path / "out", store=tmp_path / "store")
    assert result.runs["status"].tolist() == ["ok"]
    # Physics, not a bound on the tracking: over the mission's opening hover (3 s at rest on
    # its reference) the rotors carry the whole flying weight, the file's vehicle plus the arm.
    from quadarm import names

    run_id = result.runs["run_id"].iloc[0]
    ts = result.timeseries(run_id)
    hover = ts[ts[names.TIME] < cfg.scenario.hover_time]
    total = hover[[names.rotor_column(j) for j in range(len(cfg.airframe.rotors))]].sum(axis=1)
    a = cfg.arm
    weight = (cfg.airframe.mass + a.segments * a.segment_mass + a.tip_mass) * -cfg.sim.gravity[2]
    assert total.mean() == pytest.approx(weight, rel=1e-3)


def test_x2_spin_signs_are_refused_naming_the_rank(tmp_path: Path) -> None:
    path = write_vehicle(tmp_path / "x2_stored.xml", spins=X2_SPINS)
    with pytest.raises(ConfigError) as err:
        compose(mjcf_overrides(path, "scenario=hover"))
    message = str(err.value)
    assert message.startswith("airframe.") and "rank 3" in message
    assert "\n" not in message


@pytest.mark.parametrize(("case", "key"), [
    ("missing", "airframe.file"),
    ("no_body", "airframe.body"),
    ("three_rotors", "airframe.file"),
    ("not_positive_definite", "airframe.inertia"),
    ("massless", "airframe.inertia"),
    ("bad_mount", "airframe.mount"),
])
def test_bad_mjcf_input_is_one_line(case: str, key: str, tmp_path: Path) -> None:
    path = tmp_path / "x2.xml"
    extra: list[str] = []
    if case == "no_body":
        write_vehicle(path)
        extra = ["airframe.body=x3"]
    elif case == "three_rotors":
        write_vehicle(path, n_rotors=3)
    elif case == "not_positive_definite":
        write_vehicle(path, inertial='<inertial pos="0 0 0" mass="0.9" '
                                     'fullinertia="0.005 0.006 0.009 0 -0.02 0"/>')
    elif case == "massless":
        write_vehicle(path, inertial='<inertial pos="0 0 0" mass="0.9" diaginertia="0 0 0"/>')
        path.write_text(path.read_text().replace("<freejoint/>", "")
                        .replace('mass="0.3"', 'mass="0"'))
    elif case == "bad_mount":
        write_vehicle(path)
        extra = ["airframe.mount=battery_site"]
    with pytest.raises(ConfigError) as err:
        compose([*mjcf_overrides(path), "scenario=hover", *extra])
    assert str(err.value).startswith(key) and "\n" not in str(err.value)


def test_cli_refuses_a_bad_file_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from quadarm.cli import cli

    monkeypatch.chdir(tmp_path)
    path = write_vehicle(tmp_path / "x2.xml", spins=X2_SPINS)
    with pytest.raises(SystemExit) as code:
        cli(mjcf_overrides(path, "scenario=hover"))
    assert code.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "airframe" in err[0] and "rank 3" in err[0]
    assert not (tmp_path / "outputs").exists()
