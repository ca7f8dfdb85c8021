"""Bad configurations are refused before anything runs: one line naming the key, the value and
what is allowed, exit code 2, nothing written.

Most cases go through :func:`quadarm.preflight.preflight` in-process (what the CLI calls first);
a representative set goes through the real command line in subprocesses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from quadarm.cli import CONF_DIR
from quadarm.config import ConfigError
from quadarm.preflight import preflight

X_ROTORS = """rotors:
  - {pos: [0.177, 0.177], spin: 1}
  - {pos: [-0.177, 0.177], spin: -1}
  - {pos: [-0.177, -0.177], spin: SPIN}
  - {pos: [0.177, -0.177], spin: -1}
"""

# User config files (--config-dir): group/option -> YAML text.
FILES = {
    "airframe/neg_mass": "mass: -1.0\n",
    "airframe/extra_key": "mass: 1.0\nwingspan: 2.0\n",
    "airframe/str_mass": "mass: heavy\n",
    "airframe/flat_inertia": "inertia: [1.0e-3, 1.0e-3]\n",
    "airframe/zero_spin": X_ROTORS.replace("SPIN", "0"),
    "airframe/same_spin": X_ROTORS.replace("-1", "1").replace("SPIN", "1"),
    "airframe/collinear": "rotors:\n" + "".join(
        f"  - {{pos: [{x}, 0.0], spin: {s}}}\n" for x, s in
        ((0.2, 1), (0.1, -1), (-0.1, 1), (-0.2, -1))),
    "airframe/rotor_key": "rotors:\n  - {pos: [0.2, 0.2], spin: 1, dir: 2}\n",
    "airframe/two_rotors": "rotors:\n  - {pos: [0.2, 0.0], spin: 1}\n"
                           "  - {pos: [-0.2, 0.0], spin: -1}\n",
    "arm/broken": "segments: [1, 2\n",
    "arm/zero_segments": "segments: 0\n",
    "arm/neg_damping": "damping: -0.1\n",
    "arm/long_arm": "defaults:\n  - rod_schema\n  - _self_\nsegments: 200\n",
    "gains/neg_kp": "kp: [-1.0, 6.0, 10.0]\n",
    "sim/big_step": "timestep: 0.1\n",
    "scenario/no_schema": "duration: 2.0\n",
    "scenario/bad_mu": "defaults:\n  - workspace_schema\n  - _self_\nmu: 1.5\n",
    "airframe/good_frame": "mass: 1.2\nkappa: 0.02\n" + X_ROTORS.replace("SPIN", "1"),
}

# (arguments, text the one-line message must contain: the key, and the value where it has one)
BAD: list[tuple[str, str]] = [
    # user config files
    ("airframe=neg_mass", "airframe.mass=-1"),
    ("airframe=extra_key", "airframe.wingspan"),
    ("airframe=str_mass", "airframe.mass=heavy"),
    ("airframe=flat_inertia", "airframe.inertia"),
    ("airframe=zero_spin", "airframe.rotors[2].spin=0"),
    ("airframe=same_spin", "airframe.rotors"),
    ("airframe=collinear", "full rank"),
    ("airframe=rotor_key", "dir"),
    ("airframe=two_rotors", "airframe.rotors"),
    ("arm=broken", "broken.yaml"),
    ("arm=zero_segments", "arm.segments=0"),
    ("arm=neg_damping", "arm.damping=-0.1"),
    ("gains=neg_kp", "gains.kp[0]=-1"),
    ("sim=big_step", "sim.timestep=0.1"),
    ("scenario=no_schema", "scenario"),
    ("scenario=bad_mu", "scenario.mu=1.5"),
    # ranges and types
    ("arm.segments=0", "arm.segments=0"),
    ("arm.segments=1.5", "arm.segments=1.5"),
    ("arm.stiffness=0", "arm.stiffness=0"),
    ("arm.segment_mass=-0.01", "arm.segment_mass=-0.01"),
    ("arm.tension_max=0", "arm.tension_max=0"),
    ("arm.joint_range=4", "arm.joint_range=4"),
    ("arm.tendon_angles_deg=[0,120]", "arm.tendon_angles_deg"),
    ("airframe.thrust_max=0", "airframe.thrust_max=0"),
    ("airframe.mass=abc", "airframe.mass=abc"),
    ("airframe.inertia=[1,1,5]", "airframe.inertia"),
    ("airframe.rotors.0.spin=2", "airframe.rotors[0].spin=2"),
    ("gains.kd=[1,-1,1]", "gains.kd[1]=-1"),
    ("gains.kp=[1,2]", "gains.kp"),
    ("sim.timestep=0", "sim.timestep=0"),
    ("sim.integrator=RK5", "sim.integrator=RK5"),
    ("sim.gravity=[0,0]", "sim.gravity"),
    ("sim.air_density=-1", "sim.air_density=-1"),
    ("scenario=workspace scenario.mu=1.5", "scenario.mu=1.5"),
    ("scenario=workspace scenario.mu=nan", "scenario.mu=nan"),
    ("scenario=hover scenario.duration=0", "scenario.duration=0"),
    ("scenario=disturbance scenario.length=0", "scenario.length=0"),
    ("scenario=disturbance scenario.direction=[0,0,0]", "scenario.direction"),
    ("scenario=held_bend scenario.report_times=[5,40]", "scenario.report_times[1]=40"),
    ("scenario=mission scenario.hover_time=-1", "scenario.hover_time=-1"),
    ("scenario=mission scenario.duration=10", "scenario.duration=10"),
    ("seed=-1", "seed=-1"),
    ("control.tendon_map=foo", "control.tendon_map=foo"),
    ("control.feedforward=gravity", "control.feedforward=gravity"),
    ("control.tendon_damping=-0.01", "control.tendon_damping=-0.01"),
    ("control.tendon_bias=-1", "control.tendon_bias=-1"),
    ("control.tendon_bias=7", "control.tendon_bias=7"),
    ("arm.tension_max=2 control.tendon_bias=3", "control.tendon_bias=3"),
    ("++runner.grid={control.tendon_bias:[1,9]}", "control.tendon_bias=9"),
    # the vehicle must hover: 4 x 3.0 N < 1.26 kg x 9.81 m/s^2
    ("airframe.thrust_max=3.0", "airframe.thrust_max=3: must be at least 3.09 N"),
    ("airframe.mass=20", "airframe.thrust_max=8: must be at least"),
    ("arm.tip_mass=3", "airframe.thrust_max=8: must be at least"),
    # folders the command would write
    ("runner.store=/etc/passwd/trials", "runner.store=/etc/passwd/trials"),
    ("hydra.run.dir=/etc/hostname/run", "hydra.run.dir=/etc/hostname/run"),
    ("-m seed=0,1 hydra.sweep.dir=/etc/hostname/sweep", "hydra.sweep.dir=/etc/hostname/sweep"),
    # motor lag and air (issue 9)
    ("airframe.motor_tau=-0.01", "airframe.motor_tau=-0.01"),
    ("airframe.motor_tau=nan", "airframe.motor_tau=nan"),
    ("airframe.prop_radius=-0.1", "airframe.prop_radius=-0.1"),
    ("aero=downwash airframe.prop_radius=0", "airframe.prop_radius=0"),
    ("aero.drag_coefficient=-1", "aero.drag_coefficient=-1"),
    ("aero.gust_intensity=-0.5", "aero.gust_intensity=-0.5"),
    ("aero.gust_length=-5", "aero.gust_length=-5"),
    ("aero.gust_length=0", "aero.gust_length=0"),
    ("aero.wind=[nan,0,0]", "aero.wind"),
    ("aero.wind=[0,inf,0]", "aero.wind"),
    ("aero.wind=[1,2]", "aero.wind"),
    ("aero.wind=[15,15,0]", "at most 20 m/s"),
    ("aero.downwash=maybe", "aero.downwash"),
    ("aero=nope", "aero=nope"),
    # unknown keys and group options
    ("scenario=nope", "scenario=nope"),
    ("airframe=nope", "airframe=nope"),
    ("hydra/launcher=nope", "hydra/launcher=nope"),
    ("arm.bogus=1", "arm.bogus"),
    ("+arm.bogus=1", "arm.bogus"),
    ("+foo=1", "foo"),
    ("scenario=hover scenario.mu=0.5", "scenario.mu"),
    ("arm.segments=[1,", "arm.segments=[1,"),
    # runner
    ("runner.n_jobs=0", "runner.n_jobs=0"),
    ("runner.backend=mpi", "runner.backend=mpi"),
    ("runner.trials=0", "runner.trials=0"),
    ("runner.address=tcp://h:1", "runner.address=tcp://h:1"),
    ("runner=dask runner.address=not-an-address", "runner.address=not-an-address"),
    ("runner=nope", "runner=nope"),
    ("++runner.grid={arm.bogus:[1,2]}", "runner.grid.arm.bogus"),
    ("++runner.grid={arm.segments:[2,0]}", "runner.grid.arm.segments=0"),
    ("++runner.grid={gains:[soft]}", "runner.grid.gains"),
    ("++runner.grid={arm.segments:[]}", "runner.grid.arm.segments"),
    ("++runner.randomize={arm.stiffness:{dist:gamma}}", "runner.randomize.arm.stiffness.dist"),
    ("++runner.randomize={arm.stiffness:{dist:normal}}", "runner.randomize.arm.stiffness"),
    ("++runner.randomize={arm.stiffness:{dist:normal,std:-1}}",
     "runner.randomize.arm.stiffness.std=-1"),
    ("++runner.randomize={arm.stiffness:{dist:uniform,low:2,high:1}}",
     "runner.randomize.arm.stiffness.high=1"),
    ("++runner.randomize={arm.stiffness:{dist:normal,rel_std:0.1,scale:2}}",
     "runner.randomize.arm.stiffness.scale=2"),
    ("++runner.randomize={sim.integrator:{dist:normal,std:1}}",
     "runner.randomize.sim.integrator"),
    ("++runner.randomize={arm.stiffness:{dist:circle}}", "runner.randomize.arm.stiffness"),
    ("++runner.randomize={arm.nope:{dist:normal,std:1}}", "runner.randomize.arm.nope"),
    # arm=rod and the arm checks both arm schemas share
    ("arm=rod arm.length=0", "arm.length=0"),
    ("arm=rod arm.mass=-0.1", "arm.mass=-0.1"),
    ("arm=rod arm.bending_stiffness=0", "arm.bending_stiffness=0"),
    ("arm=rod arm.bending_damping=0", "arm.bending_damping=0"),
    ("arm=rod arm.joint_placement=tip", "arm.joint_placement=tip"),
    ("arm=rod arm.segments=500", "arm.segments=500"),
    ("arm=rod arm.stiffness=0.06", "arm.stiffness"),
    ("arm=rod arm.curvature_range=0", "arm.curvature_range=0"),
    ("arm=rod arm.tendon_angles_deg=[0,0,0]", "arm.tendon_angles_deg"),
    ("arm.segments=101", "arm.segments=101"),
    ("arm.tendon_angles_deg=[0,0,0]", "arm.tendon_angles_deg"),
    ("arm.tendon_angles_deg=[0,90,180]", "arm.tendon_angles_deg"),
    ("arm.tendon_angles_deg=[10,20,30]", "arm.tendon_angles_deg"),
    ("arm=long_arm", "arm.segments=200"),
    # zero gravity: only for the grounded statics scenario
    ("sim.gravity=[0,0,0]", "sim.gravity"),
    ("scenario=workspace sim.gravity=[0,0,0]", "sim.gravity"),
    # a sweep whose second job is invalid
    ("-m arm.segments=2,0", "arm.segments=0"),
    ("-m scenario=hover,workspace scenario.mu=0.5", "scenario.mu"),
]

GOOD = [
    "scenario=workspace scenario.mu=0.5",
    "-m gains=soft,stiff scenario=hover",
    "airframe=good_frame scenario=hover",
    "airframe=hex_x scenario=hover",
    "scenario=disturbance ++runner.randomize={scenario.direction:{dist:circle},"
    "arm.stiffness:{dist:normal,rel_std:0.1}} runner.trials=4",
    "runner=dask runner.address=tcp://127.0.0.1:8786",
    "++runner.grid={arm.segments:[8,12],seed:[0,1]}",
    "arm=rod arm.segments=48 arm.joint_placement=midpoint arm.curvature_range=null",
    "scenario=statics sim.gravity=[0,0,0]",
    "arm.tendon_angles_deg=[90,200,340]",
    "arm=zero_segments arm.segments=3",
    "control.feedforward=com control.tendon_damping=0.02 control.tendon_bias=6",
    "control.feedforward=wrench scenario=disturbance",
    "airframe.thrust_max=3.1 scenario=hover",  # just above the 3.09 N hover thrust
    # weak gravity needs weak rotors (zero gravity only for statics: see BAD)
    "sim.gravity=[0,0,-1] airframe.thrust_max=0.5 scenario=hover",
    "aero=gusty scenario=hover",
    "aero=downwash airframe.motor_tau=0.025",
    "aero=breeze aero.wind=[0,-20,0]",
]


def _args(case: str, conf_dir: Path) -> list[str]:
    return ["--config-dir", str(conf_dir), *case.split()]


# Each case composes the config (0.1-0.5 s of CPU): `make test` and `make test-fast` refuse every
# third case (every group of the list keeps some), `make test-all` all of them.
@pytest.mark.parametrize(("case", "expected"), [
    pytest.param(a, e, id=a, marks=() if i % 3 == 0 else pytest.mark.slow)
    for i, (a, e) in enumerate(BAD)])
def test_refused_in_preflight(case: str, expected: str, conf_dir: Path) -> None:
    with pytest.raises(ConfigError) as info:
        preflight(_args(case, conf_dir), CONF_DIR)
    message = str(info.value)
    assert "\n" not in message
    assert expected in message, message
    assert len(message) < 400


def _expected(case: str) -> tuple[int, dict[str, object]]:
    """The job count Hydra's basic sweeper makes of ``case`` (the product of its
    comma-separated values under ``-m``), and the values the composed config must hold: each
    plain ``key=value`` of the command line, and the keys of a user file chosen as a group
    option unless the command line overrides them."""
    jobs, values, files = 1, {}, {}
    for token in case.split():
        key, _, value = token.partition("=")
        if case.startswith("-m") and "{" not in value and "[" not in value:
            jobs *= len(value.split(","))
        if f"{key}/{value}" in FILES:
            text = yaml.safe_load(FILES[f"{key}/{value}"])
            files.update({f"{key}.{k}": v for k, v in text.items() if k != "defaults"})
        elif "." in key and not key.startswith(("+", "hydra")):
            values[key] = yaml.safe_load(value)
    return jobs, {**files, **values}


@pytest.mark.parametrize("case", GOOD)
def test_accepted(case: str, conf_dir: Path) -> None:
    """A valid command passes preflight with one validated job per sweep point, and the
    composed config carries what the command line and the user's files asked for."""
    jobs, values = _expected(case)
    checked = preflight(_args(case, conf_dir), CONF_DIR)
    assert (checked.jobs, checked.multirun) == (jobs, case.startswith("-m"))
    if checked.multirun:
        return
    composed = OmegaConf.structured(checked.first)  # the config the command would run
    for key, value in values.items():
        got = OmegaConf.select(composed, key)
        assert (OmegaConf.to_container(got) if OmegaConf.is_config(got) else got) == value, key


def test_missing_config_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--config-dir=.*must be an existing directory"):
        preflight(["--config-dir", str(tmp_path / "nowhere"), "scenario=hover"], CONF_DIR)


def test_sweep_expands_every_job(conf_dir: Path) -> None:
    """A multirun is validated job by job (the count proves every point was composed)."""
    checked = preflight(_args("-m gains=soft,stiff seed=0,1,2", conf_dir), CONF_DIR)
    assert checked.jobs == 6 and checked.multirun
    assert checked.out_dir is not None and checked.out_dir.startswith("outputs/multirun/")


# A representative set through the real command line: exit 2, one line, nothing written.
CLI_CASES = [
    ("airframe=extra_key", "airframe.wingspan"),
    ("arm=broken", "broken.yaml"),
    ("airframe=same_spin", "airframe.rotors"),
    ("airframe=zero_spin", "airframe.rotors[2].spin=0"),
    ("scenario=nope", "scenario=nope"),
    ("arm.bogus=1", "arm.bogus"),
    ("airframe.mass=abc", "airframe.mass=abc"),
    ("scenario=workspace scenario.mu=1.5", "scenario.mu=1.5"),
    ("-m scenario=hover arm.segments=3,0", "arm.segments=0"),
    ("++runner.grid={arm.bogus:[1,2]}", "runner.grid.arm.bogus"),
    ("++runner.randomize={arm.stiffness:{dist:normal,std:-1}}", "std=-1"),
    ("--config-dir=missing scenario=hover", "--config-dir=missing"),
    ("arm=rod arm.bending_stiffness=-1", "arm.bending_stiffness=-1"),
    ("arm=rod arm.joint_placement=tip", "arm.joint_placement=tip"),
    ("arm=rod arm.segments=500", "arm.segments=500"),
    ("arm.tendon_angles_deg=[0,0,0]", "arm.tendon_angles_deg"),
    ("scenario=hover sim.gravity=[0,0,0]", "sim.gravity"),
    ("control.feedforward=gravity", "control.feedforward=gravity"),
    ("control.tendon_damping=-0.5", "control.tendon_damping=-0.5"),
    ("control.tendon_bias=-1", "control.tendon_bias=-1"),
    ("control.tendon_bias=6.5", "control.tendon_bias=6.5"),
    ("runner.store=/etc/passwd/trials", "runner.store=/etc/passwd/trials"),
    ("airframe.thrust_max=3.0", "airframe.thrust_max=3"),
    ("airframe.motor_tau=-0.01", "airframe.motor_tau=-0.01"),
    ("aero.wind=[25,0,0]", "aero.wind"),
    ("aero=downwash airframe.prop_radius=0", "airframe.prop_radius=0"),
    ("aero.gust_length=-5", "aero.gust_length=-5"),
]


@pytest.mark.slow
def test_cli_refuses_bad_configs(conf_dir: Path, tmp_path: Path) -> None:
    before = sorted(p.relative_to(conf_dir) for p in conf_dir.rglob("*"))
    procs = []
    for i, (case, expected) in enumerate(CLI_CASES):
        cwd = tmp_path / f"case{i}"
        cwd.mkdir()
        args = case.split() if case.startswith("--config-dir=") else _args(case, conf_dir)
        procs.append((case, expected, cwd, subprocess.Popen(
            [sys.executable, "-m", "quadarm", *args], cwd=cwd, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)))
    for case, expected, cwd, proc in procs:
        out, err = proc.communicate(timeout=120)
        lines = [line for line in err.splitlines() if line.strip()]
        assert proc.returncode == 2, (case, out, err)
        assert len(lines) == 1, (case, err)
        assert lines[0].startswith("quadarm: error: ") and expected in lines[0], (case, err)
        assert "Traceback" not in out + err
        assert list(cwd.iterdir()) == [], f"{case}: wrote {list(cwd.iterdir())}"
    assert sorted(p.relative_to(conf_dir) for p in conf_dir.rglob("*")) == before
