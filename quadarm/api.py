"""The Python front door: compose, run, sweep and read studies without the shell.

    import quadarm

    cfg = quadarm.compose(["scenario=hover", "scenario.duration=2"])
    result = quadarm.run(cfg, "outputs/hover")           # a Results
    swept = quadarm.sweep(["scenario=hover"], {"gains": ["soft", "stiff"]}, "outputs/gains")
    res = quadarm.load_results(["outputs/hover"])        # runs, metrics, time series
    built = quadarm.tables(["outputs/paper/data"])       # the paper's tables

Each function does what the command line does, with the same checks and the same files:

- :func:`compose` is ``python -m quadarm``'s composition of ``conf/`` and every check its
  preflight runs on a job (group options, keys, types, ranges, the vehicle can hover, the trial
  expansion, the tuning objective, a writable trial store). A refused config raises
  :class:`~quadarm.config.ConfigError` (a ValueError) whose text is the line the CLI prints
  after ``quadarm: error:``, before anything runs or is written.
- :func:`run` runs every trial of a job and writes its tables into ``out``
  (:func:`quadarm.runner.study.run`).
- :func:`sweep` runs a group or key sweep (the cartesian product of ``grid``), every point
  composed and checked before the first one runs, each into ``out/<key=value,...>``, and
  collects them into ``out``'s ``runs.parquet`` and ``metrics.parquet``.
- :func:`load_results` reads run and sweep folders; :func:`tables` builds the paper's (and the
  other studies') tables from them.

This module is an entry point (the top layer): it imports the runner, and the runner, Hydra
and MuJoCo are imported only when a function needs them, so ``import quadarm`` stays cheap.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quadarm.config.checks import ConfigError

if TYPE_CHECKING:
    from quadarm.analysis.table import Table
    from quadarm.config import Config
    from quadarm.results.result import Results

__all__ = ["ConfigError", "Simulation", "compose", "load_results", "run", "simulate", "sweep",
           "sweep_params", "tables"]


def _overrides(overrides: Sequence[str]) -> list[str]:
    if isinstance(overrides, str) or not all(isinstance(o, str) for o in overrides):
        raise ConfigError("overrides", overrides if isinstance(overrides, str) else None,
                          "must be a list of strings such as ['scenario=hover']")
    return list(overrides)


def compose(overrides: Sequence[str] = (), conf_dir: str | Path | None = None) -> Config:
    """The validated config of one job from command-line style ``overrides``, as
    ``python -m quadarm OVERRIDES`` would run it. ``conf_dir``: another primary config folder
    (default: the shipped ``conf/``).

    Raises :class:`ConfigError` with the CLI's one-line message on a bad key, value or group
    option; nothing is written.
    """
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from quadarm.config import CONF_DIR
    from quadarm.preflight import check_job, writable
    from quadarm.tune import check as check_tune

    job = _overrides(overrides)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir or CONF_DIR).resolve()),
                                   version_base="1.3", job_name="quadarm"):
            cfg, hydra_node = check_job(job)
    finally:
        GlobalHydra.instance().clear()
    check_tune(cfg, hydra_node, multirun=False)
    if cfg.runner.store is not None:  # else default_store(out) places it
        writable("runner.store", cfg.runner.store)
    return cfg


def sweep_params(overrides: Sequence[str] = (), conf_dir: str | Path | None = None
                 ) -> dict[str, list[str]]:
    """The ``hydra.sweeper.params`` of the composed ``overrides`` (an experiment's sweep,
    e.g. ``+experiment=table3``) as a grid for :func:`sweep`: key -> values (as text)."""
    from quadarm.config import CONF_DIR
    from quadarm.config import compose as hydra_compose
    from quadarm.preflight import explain

    job = _overrides(overrides)
    try:
        node = hydra_compose(job, str(Path(conf_dir or CONF_DIR).resolve())).hydra
    except Exception as err:  # noqa: BLE001 - every composition error becomes one line
        raise explain(err, job) from None
    params = node.sweeper.get("params") or {}
    return {str(k): sweep_values(str(k), str(vals)) for k, vals in params.items()}


def sweep_values(key: str, text: str) -> list[str]:
    """The values of one ``hydra.sweeper.params`` entry, parsed by Hydra's own override parser
    (so ``range(0,10,2)``, ``choice(a,b)``, ``glob(...)`` and list values such as
    ``[1,2],[3,4]`` work as on the command line), each as override text."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        override = OverridesParser.create().parse_overrides([f"{key}={text}"])[0]
        if not override.is_sweep_override():
            return [override.get_value_element_as_str()]
        return list(override.sweep_string_iterator())
    except Exception as err:  # noqa: BLE001 - Hydra's parse errors become one line
        raise ConfigError(f"hydra.sweeper.params.{key}", text,
                          f"must be a Hydra sweep ({str(err).splitlines()[0]})") from None


def run(cfg: Config | Sequence[str], out: Path | str, n_jobs: int | None = None,
        store: Path | str | None = None) -> Results:
    """Run every trial of the job ``cfg`` (a :class:`~quadarm.config.Config`, or overrides
    to :func:`compose` first) and write its tables into ``out``.

    ``n_jobs`` overrides ``runner.n_jobs``; the trial store is ``store``, else
    ``runner.store``, else the command line's rule, :func:`quadarm.config.default_store`.
    Returns the job's :class:`Results` (``failed``, ``counts()``, the frames). Raises
    :class:`ConfigError` for an ``out`` that cannot be written, before anything runs.
    """
    from quadarm.config import Config as ConfigType
    from quadarm.preflight import writable
    from quadarm.runner.study import run as run_study

    config = cfg if isinstance(cfg, ConfigType) else compose(cfg)
    writable("out", out)
    if store is not None:
        writable("store", store)
    return run_study(config, Path(out), n_jobs=n_jobs, store=store)


@dataclasses.dataclass
class Simulation:
    """One trial flown in memory by :func:`simulate`: ``metrics`` (phase, metric, value; the
    rows ``metrics.parquet`` would hold), ``timeseries`` (the columns of
    ``timeseries.parquet``, every ``sim.log_every``-th sample; empty when the trial failed
    before flying), ``model`` (the compiled ``mujoco.MjModel``), ``status``/``message`` (``ok``,
    or why not), ``cfg`` the validated config and ``episode`` the runner's
    :class:`~quadarm.runner.episode.Episode` (log, plan, built model)."""

    metrics: Any
    timeseries: Any
    model: Any
    status: str
    message: str
    cfg: Any
    episode: Any


def keyword_overrides(kwargs: Mapping[str, Any]) -> list[str]:
    """Keyword arguments as override text: ``scenario="hover"`` -> ``scenario=hover``;
    ``scenario__duration=2`` or ``scenario={"duration": 2}`` -> ``scenario.duration=2``; lists
    as Hydra lists."""
    out: list[str] = []

    def walk(key: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{key}.{k}", v)
        else:
            out.append(f"{key}={'null' if value is None else _text(value)}")

    for key, value in kwargs.items():
        walk(key.replace("__", "."), value)
    return out


def simulate(cfg: Config | Sequence[str] | None = None, overrides: Sequence[str] = (),
             **kwargs: Any) -> Simulation:
    """Fly one trial in memory and return its :class:`Simulation`; nothing is written.

    ``cfg``: None (the shipped defaults), command-line style overrides, or a
    :class:`~quadarm.config.Config`; ``overrides`` (Hydra strings) and ``kwargs``
    (:func:`keyword_overrides`) apply on top. Every config is checked as ``python -m quadarm``
    checks it (schemas, the preflight's cross-checks and job size): :class:`ConfigError`
    (one line) before anything runs. On a Config object the overrides set keys (a group option
    such as ``aero=gusty`` needs composing: pass overrides instead). A job of more than one
    trial (``runner.grid``, ``runner.randomize``) is refused: :func:`run` runs those.
    """
    from omegaconf import OmegaConf

    from quadarm.config import Config as ConfigType
    from quadarm.config import to_config
    from quadarm.preflight import check_config, explain
    from quadarm.runner import store
    from quadarm.runner.episode import run_episode
    from quadarm.runner.trials import expand

    extra = [*_overrides(overrides), *keyword_overrides(kwargs)]
    if cfg is None or not isinstance(cfg, ConfigType):
        config = compose([*_overrides(cfg or []), *extra])
    else:
        config = cfg
        if extra:
            from hydra.core.override_parser.overrides_parser import OverridesParser

            node = OmegaConf.structured(cfg)
            try:
                for o in OverridesParser.create().parse_overrides(extra):
                    key = o.key_or_group
                    if OmegaConf.is_config(OmegaConf.select(node, key, default=None)) \
                            and isinstance(o.value(), str):
                        raise ConfigError(key, o.value(), "a group option needs composing: "
                                          "pass simulate(overrides=[...]) without a Config")
                    OmegaConf.update(node, key, o.value(), merge=False)
                config = to_config(node)
            except ConfigError:
                raise
            except Exception as err:  # noqa: BLE001 - every override error becomes one line
                raise explain(err, extra) from None
        check_config(config)
    trials = expand(config)
    if len(trials) != 1:
        raise ConfigError("runner", f"{len(trials)} trials",
                          "simulate() flies one trial: use quadarm.run for a grid or draws")
    trial = trials[0]
    assert trial.cfg is not None
    ep = run_episode(trial.cfg)
    metrics = store.metrics_frame(trial.run_id, ep.metrics)
    series = (store.timeseries_frame(ep, trial.run_id, trial.cfg.sim.log_every, trial.cfg.world,
                                     trial.cfg)
              if ep.log is not None and len(ep.log.t) else None)
    model = ep.built.model if ep.built is not None else None
    return Simulation(metrics, series, model, ep.status, ep.message, trial.cfg, ep)


def grid_points(grid: Mapping[str, Iterable[Any]]) -> list[list[str]]:
    """The override lists of every point of ``grid`` (key or group -> values), in the order
    of Hydra's basic sweeper: the last key varies fastest."""
    if isinstance(grid, str) or not isinstance(grid, Mapping):
        raise ConfigError("grid", None, "must map keys or groups to lists of values, e.g. "
                          "{'gains': ['soft', 'stiff']}")
    axes: list[list[str]] = []
    for key, values in grid.items():
        if isinstance(values, str) or not isinstance(values, Iterable):
            raise ConfigError(f"grid.{key}", values, "must be a list of values")
        vals = [_text(v) for v in values]
        if not vals:
            raise ConfigError(f"grid.{key}", "[]", "must list at least one value")
        axes.append([f"{key}={v}" for v in vals])
    return [list(point) for point in itertools.product(*axes)]


def _text(value: Any) -> str:
    """A grid value as override text (lists as Hydra lists: ``[1.0,2.0]``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return str(value)


def sweep(overrides: Sequence[str], grid: Mapping[str, Iterable[Any]],
          out: Path | str | None = None, n_jobs: int | None = None,
          store: Path | str | None = None) -> Results:
    """A group or key sweep without the shell: one job per point of ``grid`` (the cartesian
    product of its values, e.g. ``{"gains": ["soft", "stiff"], "arm.segments": [6, 12]}``) on
    top of ``overrides``, as ``python -m quadarm -m OVERRIDES key=v1,v2`` would run it.

    Every point is composed and checked before the first runs (:class:`ConfigError`, nothing
    written). ``out`` defaults to the command line's sweep folder,
    ``outputs/multirun/<date>/<time>``. Each point runs into ``out/<key=value,...>``; all
    points share one trial store (``store``, else ``runner.store``, else ``out/trials``), and
    their tables are collected into ``out/runs.parquet`` and ``out/metrics.parquet``. Returns
    the sweep's
    :class:`Results` (every point's trials; ``out_dir`` is ``out``).
    """
    from quadarm.preflight import writable
    from quadarm.results.collect import write_collection
    from quadarm.results.result import Results as ResultsType
    from quadarm.runner.study import resolve_store
    from quadarm.runner.study import run as run_study

    base = _overrides(overrides)
    points = grid_points(grid)
    configs = [compose([*base, *point]) for point in points]
    if out is None:
        out = Path("outputs/multirun") / time.strftime("%Y-%m-%d/%H-%M-%S")
    writable("out", out)
    out = Path(out)
    shared = resolve_store(configs[0], out, store)
    folders = []
    for point, cfg in zip(points, configs, strict=True):
        folder = out / ",".join(p.replace("/", "_") for p in point)
        run_study(cfg, folder, n_jobs=n_jobs, store=shared)
        folders.append(folder)
    write_collection(folders, out)
    swept = ResultsType.load(folders)
    swept.out_dir, swept.store = out, shared
    return swept


def load_results(dirs: Iterable[Path | str] | Path | str, timeseries: bool = True) -> Results:
    """The merged tables of run and sweep folders (searched recursively): ``runs`` and
    ``metrics`` as pandas frames, each trial once; ``timeseries(run_id)`` and
    ``all_timeseries()`` read the logged samples (``timeseries=False``: do not index them).
    Raises FileNotFoundError when no ``runs.parquet`` is found."""
    from quadarm.results.result import Results as ResultsType

    roots = [dirs] if isinstance(dirs, str | Path) else list(dirs)
    return ResultsType.load(roots, timeseries=timeseries)


def tables(dirs: Iterable[Path | str] | Path | str | Results,
           names: Iterable[str] | None = None) -> list[Table]:
    """Every study table whose trials are in ``dirs`` (folders, or a :class:`Results`), or
    exactly the ``names`` (``table2``, ``table3``, ``workspace``, ``disturbance``,
    ``held_bend``, ``cost``, ...; ValueError when one has no trials). Each table's ``checks``
    compare ours with the paper within the tolerances of docs/model.md section 5."""
    from quadarm.analysis.studies import build_all
    from quadarm.results.result import Results as ResultsType

    res = dirs if isinstance(dirs, ResultsType) else load_results(dirs, timeseries=False)
    return build_all(res.runs, res.metrics, names)
