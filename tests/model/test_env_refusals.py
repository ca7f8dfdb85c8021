"""The environments refuse, in one line, what they cannot fly as the command line does: the
scenarios whose grasp and release only the one-trial loop runs, and (in ``controller_action``)
every term of the registry marked ``refuse``."""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

from quadarm import terms  # noqa: E402
from quadarm.envs.core import UNSUPPORTED_SCENARIOS  # noqa: E402
from quadarm.envs.single import QuadArmEnv  # noqa: E402
from quadarm.envs.vector import QuadArmVectorEnv  # noqa: E402


@pytest.mark.parametrize("kind", UNSUPPORTED_SCENARIOS)
@pytest.mark.parametrize("cls", [QuadArmEnv, QuadArmVectorEnv], ids=["single", "vector"])
def test_scenarios_with_grasp_events_are_refused(kind, cls):
    over = [f"scenario={kind}"] + (["world=pedestal"] if kind == "pick_place" else [])
    with pytest.raises(ValueError, match=rf"^scenario={kind}: the environments do not fly"):
        cls(overrides=over) if cls is QuadArmEnv else cls(1, over)


def test_the_refusal_names_every_refused_term_that_is_on():
    from quadarm.api import compose

    c = compose(["scenario=hover", "control.feedforward=com", "control.tendon_tau=0.05"])
    line = terms.env_refusal(c)
    assert "\n" not in line
    assert "feedforward (control.feedforward=com)" in line
    assert "tendon_lowpass (control.tendon_tau=0.05)" in line
    assert terms.env_refusal(compose(["scenario=hover", "aero.downwash=true"])) == ""
