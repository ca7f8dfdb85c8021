"""The paper's headline, in the fast tier: the nominal 36 s mission's whole-mission position
error (Table II: RMS and maximum of ||e_p||) is within the tolerance of docs/model.md
section 5. The full reproduction (every table) is the slow tests/model/test_reproduction.py.
"""

from __future__ import annotations

import pytest

from quadarm.analysis import published
from quadarm.config import WHOLE_PHASE, MissionScenario, SimConfig


@pytest.mark.parametrize("metric", ["rms_cm", "max_cm"])
def test_table2_whole_mission_error_is_the_papers(nominal_mission, metric: str) -> None:
    ours = nominal_mission.metrics[(WHOLE_PHASE, metric)]
    paper = published.TABLE2[WHOLE_PHASE][metric]
    tol = published.TABLE2_TOL[(WHOLE_PHASE, metric)]
    assert tol.check(paper, ours), f"{metric}: ours {ours:.4g} vs paper {paper:.4g} " \
                                   f"({tol.describe('cm')})"


def test_the_nominal_mission_is_the_commands_default(nominal_mission) -> None:
    """What the fixture flies is what ``python -m quadarm`` flies: the schema's mission (the
    paper's 36 s) in steps of the schema's time step, with every phase of Table II scored."""
    scored = {p for p, _ in nominal_mission.metrics}
    assert set(published.PHASES) <= scored
    assert nominal_mission.steps == round(MissionScenario().duration / SimConfig().timestep)
