"""Domain randomisation from what was measured: the environments' ``randomize`` draws the
arm's fitted parameters from their identified standard errors.

``python -m quadarm.identify`` writes ``fit.json`` beside the calibrated arm's YAML: the fitted
``values`` and their ``stderr`` (the Gauss-Newton standard errors of stage 2,
:mod:`quadarm.identify.fit`), keyed by the arm's own dotted keys (``sections.0.youngs_modulus``,
``sections.1.tendons.travel_scales.2``, ``backlash``; ``sections.*.mass`` for one value that
every section shares) and by the bench's (``registration.rx``, ``marker_offset``: not the arm's,
not drawn; nor is a key the configured arm does not hold). In ``randomize`` (the syntax of
``runner.randomize``: dotted key -> distribution) the entry

    "arm": {"dist": "identified", "fit": "out/identify/fit.json", "scale": 1.0}

stands for one ``{"dist": "normal", "std": scale * stderr}`` per fitted key of the arm
(``arm.<key>``, around the config's value: the calibrated arm's YAML holds the fitted values),
keys whose standard error is zero or not finite left alone. A key fitted once for every section
(``sections.*.mass``) is drawn once per episode and its deviation applied to each section, as
the fit tied them. The other entries of ``randomize`` stay as they are (mass, motor lag, gusts:
``airframe.mass``, ``airframe.motor_tau``, ``aero.gust_intensity``, ``seed`` for the gusts'
draw), so one mapping randomises the measured arm and the rest of the vehicle together.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

IDENTIFIED = "identified"


def expand(node: DictConfig, spec: Mapping[str, Any]
           ) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """``spec`` (``randomize``) with each ``{"dist": "identified", ...}`` entry replaced by
    its normal distributions (see the module docstring), and the tied groups: the first key
    of a ``*`` key -> every key it stands for. ``node``: the config the keys are checked
    against. ValueError (one line naming the entry) for a missing or unreadable ``fit``."""
    out: dict[str, Any] = {}
    tied: dict[str, list[str]] = {}
    for key, entry in spec.items():
        if not (isinstance(entry, Mapping) and entry.get("dist") == IDENTIFIED):
            out[key] = entry
            continue
        extra = set(entry) - {"dist", "fit", "scale"}
        if extra:
            raise ValueError(f"randomize.{key}: unknown field(s) {sorted(extra)} of "
                             "dist=identified (fit, scale)")
        if key != "arm":
            raise ValueError(f"randomize.{key}: dist=identified draws the arm's fitted keys; "
                             "its key must be 'arm'")
        path = Path(str(entry.get("fit", ""))).expanduser()
        try:
            record = json.loads(path.read_text())
            values, stderr = record["values"], record["stderr"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"randomize.{key}.fit={str(path)!r}: not an identify fit.json "
                             f"({type(err).__name__}: {err})") from None
        scale = float(entry.get("scale", 1.0))
        if not scale >= 0.0:
            raise ValueError(f"randomize.{key}.scale={scale}: must be >= 0")
        n_sections = len(OmegaConf.select(node, "arm.sections", default=[]) or [])
        for name, se in stderr.items():
            if name not in values or not (isinstance(se, int | float) and math.isfinite(se)
                                          and se > 0.0):
                continue
            names = ([name.replace("*", str(j)) for j in range(n_sections)] if "*" in name
                     else [name])
            keys = [f"arm.{n}" for n in names
                    if OmegaConf.select(node, f"arm.{n}", default=None) is not None]
            if not keys:  # the bench's (registration, marker offset): not the arm's
                continue
            out[keys[0]] = {"dist": "normal", "std": scale * float(se)}
            if len(keys) > 1:
                tied[keys[0]] = keys
    return out, tied
