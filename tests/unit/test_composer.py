"""The kept composition (:func:`quadarm.config.composer.compose_job`) equals Hydra's full
composition, the ``hydra`` node included, and fails with Hydra's errors: over the command
lines of the refusal and acceptance tables and the shipped experiments."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf
from test_validation import BAD, FILES, GOOD  # noqa: F401 - FILES: the conf_dir fixture's

from quadarm.config import CONF_DIR, composer
from quadarm.preflight import jobs

EXPERIMENTS = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml"))
# The fast tier's lines: a value after its group's choice, an experiment with a value, a
# deletion, a refused key. The slow tier adds these and every table and experiment.
FAST = [
    "gains=soft gains.kp=[6,6,6] seed=3", "+experiment=table3 gains.kp=[4,4,4]",
    "arm=rod arm.segments=8 ~arm.curvature_range", "arm.bogus=1 seed=2",
]
MORE = [
    "gains.kp=[6,6,6] gains=soft", "++runner.grid={seed:[0,1]} runner.n_jobs=2",
    "+bogus.key=1", "airframe=neg_mass airframe.kappa=0.02",
    "runner.n_jobs=3 hydra.job.chdir=true seed=1",
]


def _lines() -> list[str]:
    lines = MORE + [case for case, _ in BAD] + list(GOOD)
    return lines + [f"+experiment={name}" for name in EXPERIMENTS]


def _outcome(call: Callable[..., object], *args: object, **kwargs: object) -> tuple[str, str]:
    try:
        cfg = call(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - the error is the outcome compared
        return type(err).__name__, str(err)
    assert isinstance(cfg, DictConfig)
    flags = (OmegaConf.is_struct(cfg), OmegaConf.is_readonly(cfg.hydra))
    return "ok", f"{flags}\n{OmegaConf.to_yaml(cfg)}"


# Each line is composed three times (about 1 s of CPU): the refusal and acceptance tables and
# every experiment are slow.
@pytest.mark.parametrize("line", [*FAST, *(pytest.param(line, id=line, marks=pytest.mark.slow)
                                           for line in _lines())])
def test_kept_composition_equals_hydras(line: str, conf_dir: Path) -> None:
    split = line.split()
    multirun = split[0] == "-m"
    extra = [f"hydra.searchpath=[file://{conf_dir}]"]
    try:
        job_lists = jobs(split[1:] if multirun else split, multirun)
    except Exception:  # noqa: BLE001 - a sweep Hydra cannot expand is not a job to compose
        pytest.skip("not a composable job")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3", job_name="quadarm"):
            for job in job_lists[:2]:
                overrides = [*job, *extra]
                expected = _outcome(compose, config_name="config", overrides=overrides,
                                    return_hydra_config=True)
                assert _outcome(composer.compose_job, "config", overrides) == expected, job
                # Again, from the kept composition of the same group choices.
                assert _outcome(composer.compose_job, "config", overrides) == expected, job
    finally:
        GlobalHydra.instance().clear()


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    """A YAML file changed between two compositions is composed anew (its size and
    modification time are part of the kept composition's key)."""
    (tmp_path / "gains").mkdir()
    frame = tmp_path / "gains" / "mine.yaml"
    frame.write_text("kp: [1.0, 1.0, 1.0]\n")
    overrides = ["gains=mine", f"hydra.searchpath=[file://{tmp_path}]", "seed=1"]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3", job_name="quadarm"):
            first = composer.compose_job("config", overrides).gains.kp
            frame.write_text("kp: [2.0, 2.0, 2.0]\n")
            stat = frame.stat()
            os.utime(frame, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
            second = composer.compose_job("config", overrides).gains.kp
    finally:
        GlobalHydra.instance().clear()
    assert list(first) == [1.0, 1.0, 1.0] and list(second) == [2.0, 2.0, 2.0]


def _nodes(node: object, path: str = "") -> list[tuple[str, str, object, object]]:
    """Every node of an OmegaConf tree by path: its class, its metadata (types, flags, key;
    not the resolvers' cache, which holds the time ``${now:...}`` was first read) and, for a
    leaf, its raw value."""
    import dataclasses

    from omegaconf import Container, ListConfig

    meta = dataclasses.replace(node._metadata, resolver_cache=None)  # type: ignore[attr-defined]
    out = [(path, type(node).__name__, meta,
            None if isinstance(node, Container) else node._value())]  # type: ignore[attr-defined]
    if isinstance(node, (DictConfig, ListConfig)) and not node._is_missing() \
            and not node._is_none():
        keys = range(len(node)) if isinstance(node, ListConfig) else node.keys()
        for key in keys:
            out += _nodes(node._get_node(key), f"{path}.{key}")  # type: ignore[arg-type]
    return out


def test_a_kept_composition_is_handed_out_as_a_fresh_copy_node_for_node() -> None:
    """The kept composition comes back (unpickled) equal to Hydra's node for node, types,
    flags and keys included, and each call gets its own tree: a change to one is not seen by
    the next."""
    overrides = ["scenario=hover", "seed=5"]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3", job_name="quadarm"):
            expected = compose(config_name="config", overrides=overrides,
                               return_hydra_config=True)
            composer.compose_job("config", overrides)
            first = composer.compose_job("config", overrides)  # from the kept one
            assert _nodes(first) == _nodes(expected)
            first.scenario.duration = 1.0
            first.hydra.job.name = "changed"
            again = composer.compose_job("config", overrides)
    finally:
        GlobalHydra.instance().clear()
    assert _nodes(again) == _nodes(expected)
