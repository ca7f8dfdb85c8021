"""The root config's checks that the registry of per-step terms drives (quadarm/terms.py): a term
whose row reads ``airframe.prop_radius`` is refused, in one line naming its switch, on an
airframe without a usable rotor radius; with the term off the same airframe is accepted."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import nominal

from quadarm import terms
from quadarm.config import AeroConfig, ConfigError


def test_the_rotor_radius_terms_come_from_the_registry() -> None:
    assert {t.name for t in terms.needing("airframe.prop_radius")} >= {"downwash",
                                                                       "ground_effect"}


@pytest.mark.parametrize("term", terms.needing("airframe.prop_radius"), ids=lambda t: t.name)
def test_a_term_that_reads_the_rotor_radius_needs_one(term: terms.Term) -> None:
    cfg = nominal()
    frame = cfg.airframe
    frame.prop_radius = 0.0  # past the airframe's own check, as a script could set it
    key, _ = term.switches[0]
    group, name = key.split(".")
    assert group == "aero"
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(cfg, airframe=frame, aero=AeroConfig(**{name: True}))
    assert str(err.value) == ("airframe.prop_radius=0: must be a finite number > 0 (the rotor "
                              f"radius) with {key}")
    dataclasses.replace(cfg, airframe=frame, aero=AeroConfig())  # off: accepted
