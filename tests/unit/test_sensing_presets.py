"""The sensing presets have one source, the datasheets of ``quadarm/config/sensing.py``: every
shipped ``conf/sensing/<name>.yaml`` is that preset's generated text and composes to exactly its
values; a user's own preset file, under a name of its own, is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from quadarm.api import compose
from quadarm.config import CONF_DIR, ConfigError, load_unchecked
from quadarm.config.sensing import PRESETS, preset, preset_yaml

SHIPPED = Path(CONF_DIR) / "sensing"


def test_every_shipped_file_is_its_datasheet_preset() -> None:
    assert sorted(p.stem for p in SHIPPED.glob("*.yaml")) == sorted(PRESETS)
    stale = [name for name in PRESETS if (SHIPPED / f"{name}.yaml").read_text()
             != preset_yaml(name)]
    assert not stale, f"conf/sensing/{stale[0]}.yaml differs from quadarm/config/sensing.py: " \
                      "run make presets"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_file_composes_to_the_datasheet_numbers(name: str) -> None:
    # Bit for bit: the YAML's decimal text reads back to the datasheet's doubles.
    assert load_unchecked([f"sensing={name}"]).sensing == preset(name)


def _own(tmp_path: Path, body: str) -> list[str]:
    (tmp_path / "sensing").mkdir()
    (tmp_path / "sensing" / "mine.yaml").write_text(
        "defaults:\n  - sensing_schema\n  - _self_\n\n" + body)
    return ["scenario=hover", "sensing=mine", f"hydra.searchpath=[file://{tmp_path}]"]


def test_a_users_own_preset_under_a_new_name_is_accepted(tmp_path: Path) -> None:
    cfg = compose(_own(tmp_path, "preset: mine\nimu:\n  gyro_noise: 2.0e-4\n"
                                 "position:\n  noise: 1.0e-3\n"))
    assert cfg.sensing.preset == "mine" and not cfg.sensing.exact
    assert cfg.sensing.imu.gyro_noise == 2.0e-4 and cfg.sensing.position.noise == 1.0e-3
    assert cfg.sensing.encoder == preset("ideal").encoder  # what the file leaves: the schema's


def test_sensor_values_under_the_exact_name_are_refused(tmp_path: Path) -> None:
    """A file without ``preset:`` is ``exact``, which reads the state: its values would be
    silently ignored."""
    with pytest.raises(ConfigError) as err:
        compose(_own(tmp_path, "imu:\n  gyro_noise: 2.0e-4\n"))
    assert str(err.value).startswith("sensing.preset=exact: reads the simulated state")


def test_a_preset_name_that_is_no_name_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        compose(["scenario=hover", "sensing=realistic", "sensing.preset='my preset'"])
    assert str(err.value).startswith("sensing.preset=my preset: must be a name")
