"""Reading ``grid policy`` scenarios: each value checked where it is read, a bad one named by its path.

Every reader raises :class:`~cigri.errors.ConfigError` with the field's dotted path (``classes.c0.load_pct:
must be a number, got 'x'``): the CLI prints that one line and exits 4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigError

_MISSING = object()


def _get(data: Mapping[str, Any], key: str, path: str, default: Any) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'scenario'}: must be an object")
    value = data.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise ConfigError(f"{_join(path, key)}: missing")
        return default
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def mapping(data: Mapping[str, Any], key: str, path: str = "", default: Any = _MISSING) -> Mapping[str, Any]:
    value = _get(data, key, path, default)
    if not isinstance(value, Mapping):
        raise ConfigError(f"{_join(path, key)}: must be an object, got {value!r}")
    return value


def sequence(data: Mapping[str, Any], key: str, path: str = "", default: Any = _MISSING) -> list:
    value = _get(data, key, path, default)
    if not isinstance(value, list):
        raise ConfigError(f"{_join(path, key)}: must be a list, got {value!r}")
    return value


def number(
    data: Mapping[str, Any], key: str, path: str = "", default: Any = _MISSING, *, minimum: float | None = 0
) -> float:
    """A real number (booleans refused), at least ``minimum`` (None: any)."""
    value = _get(data, key, path, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{_join(path, key)}: must be a number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{_join(path, key)}: must be >= {minimum:g}, got {value!r}")
    return float(value)


def integer(
    data: Mapping[str, Any], key: str, path: str = "", default: Any = _MISSING, *, minimum: int | None = 0
) -> int:
    """A whole number (booleans and fractions refused), at least ``minimum`` (None: any)."""
    value = _get(data, key, path, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{_join(path, key)}: must be a whole number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{_join(path, key)}: must be >= {minimum}, got {value!r}")
    return value


def text(data: Mapping[str, Any], key: str, path: str = "", default: Any = _MISSING) -> str:
    value = _get(data, key, path, default)
    if not isinstance(value, str):
        raise ConfigError(f"{_join(path, key)}: must be a string, got {value!r}")
    return value


def flag(data: Mapping[str, Any], key: str, path: str = "", default: Any = _MISSING) -> bool:
    value = _get(data, key, path, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{_join(path, key)}: must be true or false, got {value!r}")
    return value


def known(data: Mapping[str, Any], allowed: Iterable[str], path: str = "", what: str = "key") -> None:
    """Refuse a key of ``data`` not in ``allowed`` (a misspelt option must not be silently ignored)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'scenario'}: must be an object")
    allowed = sorted(allowed)
    for key in data:
        if key not in allowed:
            raise ConfigError(f"{_join(path, str(key))}: unknown {what} (valid: {', '.join(allowed)})")


def positive(data: Mapping[str, Any], key: str, path: str = "", default: Any = _MISSING) -> float:
    """A real number above zero (a share, a duration)."""
    value = number(data, key, path, default, minimum=None)
    if value <= 0:
        raise ConfigError(f"{_join(path, key)}: must be > 0, got {_get(data, key, path, default)!r}")
    return value


def records(data: Mapping[str, Any], key: str, allowed: Iterable[str], unique: str) -> list[tuple[str, Mapping]]:
    """The list ``key`` of objects, each with its path (``key[i]``), none with a key outside ``allowed``, and
    each with a whole number at ``unique`` that no earlier one has (an id)."""
    found: list[tuple[str, Mapping]] = []
    seen: set[int] = set()
    for index, item in enumerate(sequence(data, key)):
        path = f"{key}[{index}]"
        known(item, allowed, path)
        value = integer(item, unique, path)
        if value in seen:
            raise ConfigError(f"{_join(path, unique)}: duplicate {value}")
        seen.add(value)
        found.append((path, item))
    return found
