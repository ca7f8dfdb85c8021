"""The ``world`` config group: the shipped options compose into typed objects, and bad objects
are refused before anything runs (one line naming the key, exit 2, nothing written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import composed

from quadarm.cli import CONF_DIR
from quadarm.config import WORLD_KINDS, ConfigError, WorldConfig, WorldObject
from quadarm.model.clearance import check_start
from quadarm.preflight import preflight

SHIPPED = ("open", "ground", "table", "wall", "pole")


def test_default_is_open_and_the_shipped_worlds_compose() -> None:
    assert composed().world == WorldConfig()
    assert WorldConfig().objects == []
    kinds = set()
    for option in SHIPPED:
        world = composed(f"world={option}", "scenario=hover").world
        kinds.update(o.kind for o in world.objects)
        assert all(o.mount_stiffness == 0 for o in world.objects)  # shipped plates are rigid
    assert kinds == {"plane", "box", "cylinder"} and kinds <= set(WORLD_KINDS)


def test_names_default_to_kind_and_index_and_must_be_unique() -> None:
    world = WorldConfig(objects=[WorldObject(kind="box"), WorldObject(kind="sphere", size=[0.1])])
    assert world.names() == ["box0", "sphere1"]
    with pytest.raises(ConfigError, match=r"objects\[1\].name=a: must be unique"):
        WorldConfig(objects=[WorldObject(name="a"), WorldObject(name="a")])


# (override, text the one-line message must contain)
BAD = [
    ("world.objects=[{kind:cone}]", "world.objects[0].kind=cone"),
    ("world.objects=[{kind:sphere,size:[-0.1]}]", "world.objects[0].size[0]=-0.1"),
    ("world.objects=[{kind:box,size:[0.1,0.1,0]}]", "world.objects[0].size[2]=0"),
    ("world.objects=[{kind:box,size:[0.1,nan,0.1]}]", "world.objects[0].size"),
    ("world.objects=[{kind:box,size:[0.1,inf,0.1]}]", "world.objects[0].size"),
    ("world.objects=[{kind:cylinder,size:[0.1]}]", "world.objects[0].size"),
    ("world.objects=[{kind:plane,size:[-1,0]}]", "world.objects[0].size[0]=-1"),
    ("world.objects=[{kind:box,pos:[0,0,nan]}]", "world.objects[0].pos"),
    ("world.objects=[{kind:box,friction:-0.5}]", "world.objects[0].friction=-0.5"),
    ("world.objects=[{kind:box,mount_stiffness:-10}]", "world.objects[0].mount_stiffness=-10"),
    ("world.objects=[{kind:box,mount_damping:-1}]", "world.objects[0].mount_damping=-1"),
    ("world.objects=[{kind:box,mount_stiffness:100,mount_mass:0}]",
     "world.objects[0].mount_mass=0"),
    ("world.objects=[{kind:plane,size:[0,0],mount_stiffness:100}]",
     "world.objects[0].mount_stiffness=100"),
    ("world.objects=[{kind:box,colour:red}]", "colour"),
    ("world.solref=[0,1]", "world.solref[0]=0"),
    ("world.solimp=[0.9,1.2,0.001,0.5,2]", "world.solimp"),
    # Geometry (the preflight builds the model): the hanging tip is 8 mm into the table, the
    # branch runs through the arm, a box encloses the hub.
    ("world=table scenario=hover scenario.altitude=0.93",
     "world.objects[0]=table: overlaps the vehicle's tip_ball by 8.0 mm"),
    ("world.objects=[{kind:cylinder,name:branch,pos:[0,0,0.6],size:[0.02,0.5],"
     "euler_deg:[90,0,0]}] scenario=hover", "world.objects[0]=branch: overlaps the vehicle's link"),
    ("world.objects=[{kind:box,name:crate,pos:[0,0,1],size:[0.05,0.05,0.05]}] scenario=hover",
     "world.objects[0]=crate: overlaps the vehicle's"),
    ("world=table scenario=statics scenario.altitude=0.93", "world.objects[0]=table: overlaps"),
]


@pytest.mark.parametrize(("case", "expected"), BAD, ids=[c for c, _ in BAD])
def test_refused_in_preflight(case: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        preflight(case.split(), CONF_DIR)
    message = str(info.value)
    assert "\n" not in message and expected in message, message


@pytest.mark.parametrize("case", ["world=table scenario=hover", "world=wall scenario=hover",
                                  "world=pole scenario=hover", "world=ground scenario=mission",
                                  # the tip ball resting exactly on the plate is no overlap
                                  "world=table scenario=hover scenario.altitude=0.938"])
def test_clear_starts_pass_the_geometry_check(case: str) -> None:
    check_start(composed(*case.split()))


def test_worlds_pass_the_preflight() -> None:
    """The loops build the world (issue 17): a world with objects is flown, not refused."""
    assert preflight(["world=open", "scenario=hover"], CONF_DIR).jobs == 1
    assert preflight(["world=table", "scenario=hover"], CONF_DIR).jobs == 1


@pytest.mark.parametrize(("overrides", "expected"), [
    (["scenario=touch"], r"^world=open: scenario=touch needs a surface: world=table\|wall"),
    (["scenario=touch", "world=table", "scenario.approach_speed=0"],
     r"^scenario.approach_speed=0: must be a number in \(0, 3\] m/s"),
    (["scenario=touch", "world=table", "scenario.approach_speed=3.5"],
     r"^scenario.approach_speed=3.5: must be a number in \(0, 3\] m/s"),
    (["scenario=touch", "world=table", "scenario.force=40"],
     r"^scenario.force=40: the rotors cannot hold it"),
    (["scenario=touch", "world=wall", "scenario.force=40"],
     r"^scenario.force=40: the rotors cannot hold it"),
    (["scenario=touch", "world=table", "scenario.force=1.0"],
     r"^scenario.force=1: the arm pressed along its axis buckles above 0.873 N"),
    (["scenario=touch", "world=table", "scenario.target=shelf"],
     r"^scenario.target=shelf: must name a world object: table"),
])
def test_touch_refuses_bad_input(overrides: list[str], expected: str) -> None:
    """The touch task's bad input is one line naming the key, before anything runs."""
    with pytest.raises(ConfigError, match=expected):
        preflight(overrides, CONF_DIR)


def test_touch_admits_a_press_that_holds() -> None:
    """0.85 N on the table holds in flight (docs/contact.md, section 2.1) and on a clamped
    arm against a friction plate (tests/model/test_buckling.py): under the held tip's load,
    so the preflight lets it fly (the former lever, 2 r past the last link, refused it)."""
    preflight(["scenario=touch", "world=table", "scenario.force=0.85"], CONF_DIR)


@pytest.mark.slow
def test_cli_refuses_bad_objects(tmp_path: Path) -> None:
    cases = [("world.objects=[{kind:box,friction:-0.5}]", "world.objects[0].friction=-0.5"),
             ("world=table scenario=hover scenario.altitude=0.93", "world.objects[0]=table")]
    for i, (case, expected) in enumerate(cases):
        cwd = tmp_path / f"case{i}"
        cwd.mkdir()
        proc = subprocess.run([sys.executable, "-m", "quadarm", *case.split()], cwd=cwd,
                              capture_output=True, text=True, timeout=120)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2, proc.stderr
        assert len(lines) == 1 and lines[0].startswith("quadarm: error: ")
        assert expected in lines[0], lines[0]
        assert list(cwd.iterdir()) == [], f"{case}: wrote {list(cwd.iterdir())}"


def test_the_compliance_study_flies_the_table_and_the_wall(tmp_path: Path) -> None:
    """``make beyond`` plans the compliance study as one job per surface, each the 4 x 4 grid
    of arm stiffness and approach speed of the touch task."""
    from quadarm.reproduce import plan_beyond

    jobs = plan_beyond(tmp_path, studies=(("compliance", "world"),))
    assert sorted(j.cfg.world.names()[0] for j in jobs) == ["table", "wall"]
    for job in jobs:
        assert job.cfg.scenario.kind == "touch"
        assert [len(v) for v in job.cfg.runner.grid.values()] == [4, 4]
