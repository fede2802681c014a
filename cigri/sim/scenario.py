"""Workloads for the simulator: a YAML scenario (clusters, users, campaigns), and Eagle/Sparrow traces
(``arrival n_tasks mean_duration d1 ... dn``, one job a line) turned into campaigns."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import ConfigError
from .cluster import ClusterSpec


@dataclass(frozen=True)
class CampaignPlan:
    name: str
    user: str
    arrival: float
    durations: tuple[float, ...]
    type: str = "default"
    clusters: tuple[str, ...] = ()  # empty: every cluster
    input_files: tuple[str, ...] = ()
    cores: int = 1

    @property
    def mean_duration(self) -> float:
        return sum(self.durations) / len(self.durations) if self.durations else 0.0


@dataclass
class Scenario:
    name: str
    clusters: list[ClusterSpec]
    campaigns: list[CampaignPlan]
    users: dict[str, float] = field(default_factory=dict)  # user -> entitlement share
    files: dict[str, int] = field(default_factory=dict)  # input file -> bytes
    period: float = 30.0
    short_cutoff: float = 60.0
    max_time: float = 90 * 86400.0
    seed: int = 1


def _fail(path: str, message: str):
    raise ConfigError(f"scenario {path}: {message}")


def _number(value, path: str, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(path, f"expected a number, not {value!r}")
    if value < minimum:
        _fail(path, f"must be at least {minimum:g}")
    return float(value)


def _durations(spec: dict, n: int, rng: random.Random, path: str) -> tuple[float, ...]:
    """Job durations from ``duration: {dist: fixed|uniform|exponential|lognormal, ...}``."""
    dist = spec.get("dist", "fixed")
    if dist == "fixed":
        value = _number(spec.get("value", spec.get("mean")), f"{path}.value")
        return (value,) * n
    if dist == "uniform":
        low, high = _number(spec.get("min"), f"{path}.min"), _number(spec.get("max"), f"{path}.max")
        return tuple(rng.uniform(low, high) for _ in range(n))
    if dist == "exponential":
        mean = _number(spec.get("mean"), f"{path}.mean", 1e-9)
        return tuple(rng.expovariate(1 / mean) for _ in range(n))
    if dist == "lognormal":
        mu, sigma = _number(spec.get("mu"), f"{path}.mu", -1e9), _number(spec.get("sigma"), f"{path}.sigma")
        return tuple(rng.lognormvariate(mu, sigma) for _ in range(n))
    _fail(f"{path}.dist", f"unknown distribution {dist!r} (fixed, uniform, exponential, lognormal)")
    raise AssertionError


def read_trace(path: Path, *, user: str = "trace", scale: float = 1.0, prefix: str = "trace") -> list[CampaignPlan]:
    """Each trace line is a campaign: arrival time, then its jobs' durations (Eagle/Sparrow format)."""
    plans = []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        _fail(str(path), f"cannot read: {exc.strerror}")
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words:
            continue
        try:
            arrival, count = float(words[0]), int(words[1])
            durations = tuple(float(w) * scale for w in words[3 : 3 + count])
        except (ValueError, IndexError):
            _fail(f"{path} line {number}", "expected: arrival n_tasks mean_duration d1 ... dn")
        if len(durations) != count:
            _fail(f"{path} line {number}", f"{count} tasks announced, {len(durations)} durations given")
        plans.append(CampaignPlan(f"{prefix}-{number}", user, arrival, durations))
    return plans


def load(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        _fail(str(path), f"cannot read: {exc.strerror}")
    except yaml.YAMLError as exc:
        _fail(str(path), f"not valid YAML ({exc})")
    if not isinstance(data, dict):
        _fail(str(path), "expected a mapping")
    return parse(data, base_dir=path.parent)


def _cluster(raw: dict, index: int) -> ClusterSpec:
    path = f"clusters[{index}]"
    if not isinstance(raw, dict) or "name" not in raw:
        _fail(path, "each cluster needs a name and slots")
    local = raw.get("local_load") or {}
    outages = []
    for j, window in enumerate(raw.get("outages") or []):
        if not (isinstance(window, list) and len(window) == 2 and window[0] < window[1]):
            _fail(f"{path}.outages[{j}]", "expected [start, end] with start < end")
        outages.append((float(window[0]), float(window[1])))
    known = {
        "name",
        "slots",
        "speed",
        "delay",
        "failure",
        "outages",
        "black_hole",
        "bandwidth",
        "local_load",
        "queue_depth",
        "best_effort",
    }
    for key in raw:
        if key not in known:
            _fail(f"{path}.{key}", f"unknown key (valid: {', '.join(sorted(known))})")
    return ClusterSpec(
        name=str(raw["name"]),
        slots=int(_number(raw.get("slots"), f"{path}.slots", 1)),
        speed=_number(raw.get("speed", 1.0), f"{path}.speed", 1e-9),
        delay=_number(raw.get("delay", 0.0), f"{path}.delay"),
        failure=_number(raw.get("failure", 0.0), f"{path}.failure"),
        outages=outages,
        black_hole=bool(raw.get("black_hole", False)),
        bandwidth=_number(raw.get("bandwidth", 0.0), f"{path}.bandwidth"),
        local_rate=_number(local.get("rate", 0.0), f"{path}.local_load.rate"),
        local_duration=_number(local.get("duration", 3600.0), f"{path}.local_load.duration", 1e-9),
        local_size=int(_number(local.get("size", 1), f"{path}.local_load.size", 1)),
        queue_depth=int(raw["queue_depth"]) if raw.get("queue_depth") is not None else None,
        best_effort=bool(raw.get("best_effort", True)),
    )


def parse(data: dict, *, base_dir: Path = Path(".")) -> Scenario:
    seed = int(data.get("seed", 1))
    rng = random.Random(seed)
    clusters = [_cluster(raw, i) for i, raw in enumerate(data.get("clusters") or [])]
    if not clusters:
        _fail("clusters", "at least one cluster is needed")
    names = {c.name for c in clusters}
    users = {
        str(u): _number((v or {}).get("share", 1.0), f"users.{u}.share", 1e-9)
        for u, v in (data.get("users") or {}).items()
    }
    plans: list[CampaignPlan] = []
    for i, raw in enumerate(data.get("campaigns") or []):
        path = f"campaigns[{i}]"
        jobs = raw.get("durations")
        if jobs is not None:
            durations = tuple(_number(d, f"{path}.durations") for d in jobs)
        else:
            count = int(_number(raw.get("jobs"), f"{path}.jobs", 1))
            durations = _durations(raw.get("duration") or {}, count, rng, f"{path}.duration")
        wanted = tuple(raw.get("clusters") or ())
        for name in wanted:
            if name not in names:
                _fail(f"{path}.clusters", f"unknown cluster {name!r}")
        plans.append(
            CampaignPlan(
                name=str(raw.get("name", f"c{i}")),
                user=str(raw.get("user", "user")),
                arrival=_number(raw.get("arrival", 0.0), f"{path}.arrival"),
                durations=durations,
                type=str(raw.get("type", "default")),
                clusters=wanted,
                input_files=tuple(raw.get("input_files") or ()),
                cores=int(raw.get("cores", 1)),
            )
        )
    for i, raw in enumerate(data.get("traces") or []):
        trace = Path(raw["file"])
        plans += read_trace(
            trace if trace.is_absolute() else base_dir / trace,
            user=str(raw.get("user", "trace")),
            scale=float(raw.get("scale", 1.0)),
            prefix=str(raw.get("prefix", f"trace{i}")),
        )
    for plan in plans:
        users.setdefault(plan.user, 1.0)
    plans.sort(key=lambda p: (p.arrival, p.name))
    return Scenario(
        name=str(data.get("name", "scenario")),
        clusters=clusters,
        campaigns=plans,
        users=users,
        files={str(k): int(v) for k, v in (data.get("files") or {}).items()},
        period=_number(data.get("period", 30.0), "period", 1e-3),
        short_cutoff=_number(data.get("short_cutoff", 60.0), "short_cutoff"),
        max_time=_number(data.get("max_time", 90 * 86400.0), "max_time", 1.0),
        seed=seed,
    )
