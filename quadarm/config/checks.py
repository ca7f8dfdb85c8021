"""Range checks shared by the config schemas, and the one-line :class:`ConfigError`."""

from __future__ import annotations

import math
from typing import Any


class ConfigError(ValueError):
    """A configuration value outside what quadarm accepts.

    The message is a single line that names the dotted key, the value given and what is
    allowed, e.g. ``arm.segments=0: must be an integer >= 1``.
    """

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        shown = "" if value is None or value == "" else f"={_show(value)}"
        super().__init__(f"{key}{shown}: {allowed}")

    def prefixed(self, prefix: str) -> ConfigError:
        return ConfigError(f"{prefix}.{self.key}", self.value, self.allowed)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _positive(key: str, value: Any) -> None:
    if not (_real(value) and value > 0):
        raise ConfigError(key, value, "must be a finite number > 0")


def _non_negative(key: str, value: Any) -> None:
    if not (_real(value) and value >= 0):
        raise ConfigError(key, value, "must be a finite number >= 0")


def _in_range(key: str, value: Any, lo: float, hi: float) -> None:
    if not (_real(value) and lo <= value <= hi):
        raise ConfigError(key, value, f"must be a number in [{lo:g}, {hi:g}]")


def _vector(key: str, value: Any, n: int, check: Any = None) -> None:
    if len(value) != n or not all(_real(v) for v in value):
        raise ConfigError(key, list(value), f"must be a list of {n} finite numbers")
    if check is not None:
        for i, v in enumerate(value):
            check(f"{key}[{i}]", v)


def _integer(key: str, value: Any, lo: int) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= lo):
        raise ConfigError(key, value, f"must be an integer >= {lo}")


def _choice(key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(key, value, f"must be one of {', '.join(allowed)}")
