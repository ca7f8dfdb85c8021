"""The environments refuse, in one line, what they cannot fly as the command line does: the
vector environment the scenarios whose events switch the payload weld (the single environment
flies them, tests/model/test_scenario_tasks.py), and both environments' ``controller_action``
every term of the registry marked ``refuse`` (none today: both run the whole controller,
tests/model/test_terms_conformance.py)."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("gymnasium")

from quadarm import terms  # noqa: E402
from quadarm.envs.core import UNSUPPORTED_SCENARIOS  # noqa: E402
from quadarm.envs.single import QuadArmEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402


def test_the_vector_env_refuses_exactly_the_weld_scenarios():
    from quadarm.scenarios.tasks import TASKS

    assert set(UNSUPPORTED_SCENARIOS) == {k for k, t in TASKS.items() if t.weld}
    assert set(UNSUPPORTED_SCENARIOS) == {"payload", "pick_place"}


@pytest.mark.parametrize("kind", UNSUPPORTED_SCENARIOS)
def test_scenarios_with_grasp_events_are_refused_by_the_vector_env(kind):
    over = [f"scenario={kind}"] + (["world=pedestal"] if kind == "pick_place" else [])
    with pytest.raises(ValueError, match=rf"^scenario={kind}: the vector environment's batch "
                       r'engine does not fly .*; pass engine="rows"'):  # the line names the fix
        QuadArmVectorEnv(1, over)
    QuadArmEnv(overrides=over).close()  # the single environment flies them
    QuadArmVectorEnv(1, over, engine="rows").close()  # and so does the rows engine


def test_the_refusal_names_every_refused_term_that_is_on(monkeypatch):
    from quadarm.api import compose

    c = compose(["scenario=hover", "control.feedforward=com", "control.tendon_tau=0.05"])
    assert terms.env_refusal(c) == ""  # the environments run the whole controller
    # A term the environments could not run is named with its switch, on one line.
    rows = tuple(dataclasses.replace(t, env=terms.ENV_REFUSE)
                 if t.name in ("feedforward", "tendon_lowpass") else t for t in terms.TERMS)
    monkeypatch.setattr(terms, "TERMS", rows)
    line = terms.env_refusal(c)
    assert "\n" not in line
    assert "feedforward (control.feedforward=com)" in line
    assert "tendon_lowpass (control.tendon_tau=0.05)" in line
    assert terms.env_refusal(compose(["scenario=hover", "aero.downwash=true"])) == ""
