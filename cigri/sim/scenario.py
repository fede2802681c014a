"""Workloads for the simulator: a YAML scenario (clusters, users, campaigns), and Eagle/Sparrow traces
(``arrival n_tasks mean_duration d1 ... dn``, one job a line) turned into campaigns.

A scenario::

    name: example
    period: 30                # seconds between two cigri passes, at most: a job's end wakes cigri sooner
    min_gap: 5                # seconds between two passes, at least
    poll: 1                   # how often, between passes, cigri looks for a job's end
    fix_delay: 600            # the simulated user fixes (resubmits) a failed job that long after it failed
    stall: 86400              # stop with an error after that long without a job starting or ending
    finalize: false           # every campaign's default for the JDL's finalize (a campaign may set its own)
    seed: 1
    clusters:
      - {name: alpha, slots: 64, delay: 10}          # slots: N is one node of N cores
      - name: beta                                     # or groups of alike nodes, with OAR-style properties
        nodes:
          - {count: 10, cores: 16, properties: {gpu: "yes", mem: "64"}}
          - {count: 40, cores: 8}                      # count defaults to 1
        speed: 1.5
        failure: 0.02
        outages: [[3600, 5400]]
        local_load: {rate: 0.002, duration: 900, size: 8}   # a local job takes size cores on one node
      - name: gamma
        slots: 16
        local_load: {steps: [[0, 4], [3600, 12], [7200, 0]]}  # local users hold 4 cores, then 12, then none
    file_server: {host: nfs, tau: 60, per_weight: 0.1, base: 0.5, reference: 3}  # clusters: [...] (all)
    users:
      alice: {share: 2}
    short_cutoff: 600         # campaigns of a true mean job duration up to this are short (the metrics')
    config:                   # the simulated state's grid config (the strategies and their options)
      metasched: fairshare
    campaigns:
      - {name: sweep, user: alice, arrival: 0, jobs: 2000, duration: {dist: exponential, mean: 60}}
      - name: render
        jobs: 100
        durations: [...]                      # or jobs and a duration: SECONDS or a distribution
        resources: /nodes=2/core=4            # a JDL's (default core=1; cores: C is core=C)
        properties: "gpu='yes' AND mem='64'"  # name='value' joined by AND
        clusters:                             # a list of names, or names with their own settings
          beta: {}
          alpha: {resources: core=4, properties: ""}
        io_weight: 2                          # each running job weighs 2 on the file server (default 1)

A cluster's other keys: ``black_hole`` (true: every job it starts ends at once, exit 0; ``{from: SECONDS}``:
from then on), ``bandwidth`` (bytes/s of its link: cigri's staging of input files takes size / bandwidth,
one file at a time, and a job whose files have not arrived holds its slot until they have; 0: instant),
``cache_quota`` (bytes, the cluster's cache_quota), ``queue_depth``, ``best_effort``.

The seed draws the campaigns' durations and each cluster's luck. A cluster's local users arrive from a
stream of its own (the seed and its name: the same whatever other clusters the scenario has), and each run
of a job fails (``failure``) on a draw of its own (the cluster, the job, which run of it there is), not on the
next number of a stream every job's end takes from. So two schedules of one world meet the same luck, and
comparing them (a strategy against another, a cluster removed or added) measures the schedules.

A campaign's input files (staged by cigri's runner into the clusters' caches, :mod:`cigri.staging`):
``input_files: [NAME, ...]`` (every job reads them all; their sizes in the top-level ``files: {NAME: BYTES}``),
or ``files: {count: N, size: BYTES, per_job: K, layout: shared|contiguous}`` with keys ``f0.dat``.. padded to
the count's width (``f007.dat``): with s = ``i * count // jobs`` (s = i when there are as many jobs as files),
``contiguous``: job i reads files s .. s+K-1, clipped at the last one (the BOINC redesign's contiguous ranges);
``shared``: job i reads file s alone (consecutive jobs share a file; K must be 1).

The file server's load follows ``base + per_weight x`` the I/O weight of the grid jobs running on its clusters,
with the time constant ``tau`` (seconds); a cluster whose ``sensor`` is ``load:HOST`` (config) reads it;
``reference`` is the load the metrics count the time above (default: the configured reference of a cluster
reading it). A job needs its nodes, each with its cores free and every property asked for; it starts FIFO on the
first nodes that fit. A cluster none of whose nodes can ever satisfy a campaign's request refuses it at
submission: cigri opens a campaign event for that cluster and the campaign's jobs run elsewhere (once they have,
the simulated user closes the event). A campaign that no cluster can ever run is an error here. Errors name the
key path (``clusters[1].nodes[0].cores``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import ConfigError, JdlError
from .cluster import ClusterSpec, NodeGroup, refusal, request, valid_property
from .fileserver import FileServerSpec

CAMPAIGN_KEYS = (
    "name",
    "user",
    "arrival",
    "jobs",
    "duration",
    "durations",
    "type",
    "clusters",
    "input_files",
    "files",
    "cores",
    "resources",
    "properties",
    "finalize",
    "io_weight",
)
FILE_SERVER_KEYS = ("host", "tau", "per_weight", "base", "reference", "clusters")
LOCAL_LOAD_KEYS = ("rate", "duration", "size", "steps")
REQUEST_KEYS = ("resources", "properties")  # what a campaign may set for one of its clusters


@dataclass(frozen=True)
class CampaignPlan:
    name: str
    user: str
    arrival: float
    durations: tuple[float, ...]
    type: str = "default"
    clusters: tuple[str, ...] = ()  # empty: every cluster
    input_files: tuple[str, ...] = ()
    job_files: tuple[tuple[int, ...], ...] = ()  # files: each job's file numbers (keys: file_key)
    file_count: int = 0
    file_size: int = 0
    resources: str = "core=1"  # the JDL's, for every cluster
    properties: str = ""
    settings: dict[str, dict[str, str]] = field(default_factory=dict)  # cluster -> its own resources, properties
    cores: int = 1  # cores a job holds: the fewest its clusters' requests take (the work's lower bound)
    finalize: bool = False  # the JDL's finalize: its last jobs replicated on idle slots of other clusters
    io_weight: float = 1.0  # what one of its running jobs weighs on the file server

    def file_key(self, number: int) -> str:
        """The key of file ``number`` of the campaign's ``files`` (``f007.dat`` among a thousand)."""
        return f"f{number:0{len(str(max(self.file_count - 1, 0)))}d}.dat"

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
    short_cutoff: float = 600.0  # campaigns whose true mean job duration is at most this are short
    config: dict[str, object] = field(default_factory=dict)  # grid config keys of the simulated state
    max_time: float = 90 * 86400.0
    seed: int = 1
    fix_delay: float = 600.0  # how long the simulated user takes to fix a failed job
    min_gap: float = 5.0  # the looping almighty: seconds between two passes, however busy the clusters
    poll: float = 1.0  # how often, between passes, it looks for a job's end
    stall: float = 86400.0  # seconds without progress after which the simulation stops, naming what is stuck
    file_server: FileServerSpec | None = None  # the storage the grid jobs load (a flow sensor)


def _fail(path: str, message: str):
    raise ConfigError(f"scenario {path}: {message}")


def _number(value, path: str, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(path, f"expected a number, not {value!r}")
    if value < minimum:
        _fail(path, f"must be at least {minimum:g}")
    return float(value)


def _durations(spec, n: int, rng: random.Random, path: str) -> tuple[float, ...]:
    """Job durations from ``duration: SECONDS`` or ``duration: {dist: fixed|uniform|exponential|lognormal, ...}``."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return (_number(spec, path),) * n
    if not isinstance(spec, dict):
        _fail(path, f"expected seconds or {{dist: ...}}, not {spec!r}")
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


def load(path: str | Path, *, seed: int | None = None) -> Scenario:
    """The scenario of a YAML file; ``seed`` in place of the file's (:func:`parse`)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        _fail(str(path), f"cannot read: {exc.strerror}")
    except yaml.YAMLError as exc:
        _fail(str(path), f"not valid YAML ({exc})")
    if not isinstance(data, dict):
        _fail(str(path), "expected a mapping")
    return parse(data, base_dir=path.parent, seed=seed)


def _count(value, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(path, f"expected a whole number, not {value!r}")
    if value < 1:
        _fail(path, "must be at least 1")
    return value


def _node_properties(raw, path: str) -> dict[str, str]:
    """A node's properties: names to values, which jobs ask for as ``name='value'``."""
    if not isinstance(raw, dict):
        _fail(path, "expected a mapping of property names to values, like {gpu: 'yes'}")
    out = {}
    for name, value in raw.items():
        if isinstance(value, bool):  # YAML reads an unquoted yes, no, true or false as a boolean
            _fail(f"{path}.{name}", f"write the value in quotes ({name}: '{'yes' if value else 'no'}'?)")
        if not isinstance(value, (str, int, float)) or not valid_property(str(name), str(value)):
            _fail(f"{path}.{name}", f"expected a word as name and a value without quotes, not {value!r}")
        out[str(name)] = str(value)
    return out


def _nodes(raw, path: str) -> tuple[NodeGroup, ...]:
    """``nodes: [{count: 10, cores: 16, properties: {gpu: 'yes'}}, ...]``."""
    if not isinstance(raw, list) or not raw:
        _fail(path, "expected a non-empty list of node groups, like [{count: 10, cores: 16}]")
    groups = []
    for i, group in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(group, dict) or "cores" not in group:
            _fail(where, "each node group needs its cores (and a count, 1 by default)")
        for key in group:
            if key not in ("count", "cores", "properties"):
                _fail(f"{where}.{key}", "unknown key (valid: cores, count, properties)")
        groups.append(
            NodeGroup(
                count=_count(group.get("count", 1), f"{where}.count"),
                cores=_count(group["cores"], f"{where}.cores"),
                properties=_node_properties(group.get("properties") or {}, f"{where}.properties"),
            )
        )
    return tuple(groups)


def _cluster_nodes(raw: dict, path: str) -> tuple[NodeGroup, ...]:
    """``slots: N`` is one node of N cores without properties: the pool of cores of earlier scenarios."""
    if "nodes" in raw and "slots" in raw:
        _fail(path, "give slots or nodes, not both")
    if "nodes" in raw:
        return _nodes(raw["nodes"], f"{path}.nodes")
    if "slots" not in raw:
        _fail(path, "give slots (one node of that many cores) or nodes (groups of nodes)")
    return (NodeGroup(1, int(_number(raw["slots"], f"{path}.slots", 1))),)


def _cluster(raw: dict, index: int) -> ClusterSpec:
    path = f"clusters[{index}]"
    if not isinstance(raw, dict) or "name" not in raw:
        _fail(path, "each cluster needs a name, and slots or nodes")
    local = raw.get("local_load") or {}
    if not isinstance(local, dict):
        _fail(f"{path}.local_load", "expected a mapping with rate, duration, size and/or steps")
    for key in local:
        if key not in LOCAL_LOAD_KEYS:
            _fail(f"{path}.local_load.{key}", f"unknown key (valid: {', '.join(LOCAL_LOAD_KEYS)})")
    outages = []
    for j, window in enumerate(raw.get("outages") or []):
        if not (isinstance(window, list) and len(window) == 2 and window[0] < window[1]):
            _fail(f"{path}.outages[{j}]", "expected [start, end] with start < end")
        outages.append((float(window[0]), float(window[1])))
    known = {
        "name",
        "slots",
        "nodes",
        "speed",
        "delay",
        "failure",
        "outages",
        "black_hole",
        "bandwidth",
        "cache_quota",
        "local_load",
        "queue_depth",
        "best_effort",
    }
    for key in raw:
        if key not in known:
            _fail(f"{path}.{key}", f"unknown key (valid: {', '.join(sorted(known))})")
    nodes = _cluster_nodes(raw, path)
    local_size = int(_number(local.get("size", 1), f"{path}.local_load.size", 1))
    largest = max(group.cores for group in nodes)
    if local_size > largest:
        _fail(f"{path}.local_load.size", f"a local job runs on one node, and the largest has {largest} cores")
    return ClusterSpec(
        name=str(raw["name"]),
        nodes=nodes,
        speed=_number(raw.get("speed", 1.0), f"{path}.speed", 1e-9),
        delay=_number(raw.get("delay", 0.0), f"{path}.delay"),
        failure=_number(raw.get("failure", 0.0), f"{path}.failure"),
        outages=tuple(outages),
        black_hole=bool(raw.get("black_hole", False)),
        black_hole_from=_black_hole_from(raw.get("black_hole", False), f"{path}.black_hole"),
        bandwidth=_number(raw.get("bandwidth", 0.0), f"{path}.bandwidth"),
        cache_quota=int(_number(raw["cache_quota"], f"{path}.cache_quota", 1)) if "cache_quota" in raw else None,
        local_rate=_number(local.get("rate", 0.0), f"{path}.local_load.rate"),
        local_duration=_number(local.get("duration", 3600.0), f"{path}.local_load.duration", 1e-9),
        local_size=local_size,
        local_steps=_steps(local.get("steps") or [], f"{path}.local_load.steps", sum(g.count * g.cores for g in nodes)),
        queue_depth=int(raw["queue_depth"]) if raw.get("queue_depth") is not None else None,
        best_effort=bool(raw.get("best_effort", True)),
    )


def _black_hole_from(raw, path: str) -> float:
    """When a cluster becomes a black hole: ``true`` (from the start) or ``{from: SECONDS}``."""
    if isinstance(raw, bool):
        return 0.0
    if not isinstance(raw, dict) or set(raw) != {"from"}:
        _fail(path, f"expected true, false or {{from: SECONDS}}, not {raw!r}")
    return _number(raw["from"], f"{path}.from")


def _steps(raw, path: str, slots: int) -> tuple[tuple[float, int], ...]:
    """``[[t, cores], ...]``: from t on, local users hold that many cores (times increasing)."""
    if not isinstance(raw, list):
        _fail(path, "expected a list of [time, cores]")
    steps: list[tuple[float, int]] = []
    for i, step in enumerate(raw):
        if not (isinstance(step, list) and len(step) == 2):
            _fail(f"{path}[{i}]", f"expected [time, cores], not {step!r}")
        when = _number(step[0], f"{path}[{i}][0]")
        cores = step[1]
        if isinstance(cores, bool) or not isinstance(cores, int) or not 0 <= cores <= slots:
            _fail(f"{path}[{i}][1]", f"expected a whole number of cores from 0 to {slots}, not {cores!r}")
        if steps and when <= steps[-1][0]:
            _fail(f"{path}[{i}][0]", "times must increase")
        steps.append((when, cores))
    return tuple(steps)


def _file_server(raw, names: set[str]) -> FileServerSpec | None:
    """``file_server: {host, tau, per_weight, base, reference, clusters}``."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("host"), str) or not raw["host"]:
        _fail("file_server", "expected a mapping with at least a host, like {host: nfs, tau: 60}")
    for key in raw:
        if key not in FILE_SERVER_KEYS:
            _fail(f"file_server.{key}", f"unknown key (valid: {', '.join(FILE_SERVER_KEYS)})")
    served = raw.get("clusters") or []
    if not isinstance(served, list) or any(name not in names for name in served):
        _fail("file_server.clusters", f"expected a list of the scenario's clusters, not {served!r}")
    reference = raw.get("reference")
    return FileServerSpec(
        host=raw["host"],
        tau=_number(raw.get("tau", 60.0), "file_server.tau"),
        per_weight=_number(raw.get("per_weight", 1.0), "file_server.per_weight"),
        base=_number(raw.get("base", 0.0), "file_server.base"),
        reference=None if reference is None else _number(reference, "file_server.reference"),
        clusters=tuple(str(name) for name in served),
    )


def _request(raw: dict, path: str, resources: str, properties: str) -> tuple[str, str]:
    """The ``resources`` and ``properties`` ``raw`` sets, or the ones given, checked as a JDL's are."""
    resources, properties = raw.get("resources", resources), raw.get("properties", properties)
    if not isinstance(properties, str):
        _fail(f"{path}.properties", f"expected a string like \"gpu='yes' AND mem='64'\", not {properties!r}")
    try:
        request(resources, properties, path)
    except JdlError as exc:
        raise ConfigError(f"scenario {exc}") from None
    return resources, properties


def _campaign_clusters(raw, path: str, names: set[str]) -> tuple[tuple[str, ...], dict[str, dict[str, str]]]:
    """``clusters``: a list of names, or a mapping of names to their own resources and properties."""
    if raw is None:
        return (), {}
    if isinstance(raw, list) and all(isinstance(name, str) for name in raw):
        raw = dict.fromkeys(raw)
    if not isinstance(raw, dict):
        _fail(path, "expected a list of cluster names, or a mapping of names to {resources, properties}")
    settings = {}
    for name, own in raw.items():
        if name not in names:
            _fail(path, f"unknown cluster {name!r}")
        if own is None:
            continue
        if not isinstance(own, dict):
            _fail(f"{path}.{name}", "expected a mapping with resources and/or properties")
        for key in own:
            if key not in REQUEST_KEYS:
                _fail(f"{path}.{name}.{key}", f"unknown key (valid: {', '.join(REQUEST_KEYS)})")
        settings[str(name)] = {key: own[key] for key in REQUEST_KEYS if key in own}
    return tuple(str(name) for name in raw), settings


def _flag(value, path: str) -> bool:
    if not isinstance(value, bool):
        _fail(path, f"expected true or false, not {value!r}")
    return value


def _campaign(
    raw: dict, index: int, clusters: list[ClusterSpec], rng: random.Random, finalize: bool = False
) -> CampaignPlan:
    path = f"campaigns[{index}]"
    if not isinstance(raw, dict):
        _fail(path, "expected a mapping")
    for key in raw:
        if key not in CAMPAIGN_KEYS:
            _fail(f"{path}.{key}", f"unknown key (valid: {', '.join(sorted(CAMPAIGN_KEYS))})")
    jobs = raw.get("durations")
    if jobs is not None:
        durations = tuple(_number(d, f"{path}.durations") for d in jobs)
    else:
        count = int(_number(raw.get("jobs"), f"{path}.jobs", 1))
        durations = _durations(raw.get("duration") or {}, count, rng, f"{path}.duration")
    if "cores" in raw and "resources" in raw:
        _fail(path, "give cores or resources, not both")
    default = f"core={_count(raw['cores'], f'{path}.cores')}" if "cores" in raw else "core=1"
    resources, properties = _request(raw, path, default, "")
    wanted, settings = _campaign_clusters(raw.get("clusters"), f"{path}.clusters", {c.name for c in clusters})
    requests = {
        cluster.name: _request(settings.get(cluster.name, {}), f"{path}.clusters.{cluster.name}", resources, properties)
        for cluster in clusters
        if not wanted or cluster.name in wanted
    }
    cores = _fewest_cores(path, {c.name: c for c in clusters}, requests)
    if "files" in raw and "input_files" in raw:
        _fail(path, "give files or input_files, not both")
    job_files, file_count, file_size = _job_files(raw.get("files"), len(durations), f"{path}.files")
    return CampaignPlan(
        name=str(raw.get("name", f"c{index}")),
        user=str(raw.get("user", "user")),
        arrival=_number(raw.get("arrival", 0.0), f"{path}.arrival"),
        durations=durations,
        type=str(raw.get("type", "default")),
        clusters=wanted,
        input_files=tuple(raw.get("input_files") or ()),
        job_files=job_files,
        file_count=file_count,
        file_size=file_size,
        resources=resources,
        properties=properties,
        settings=settings,
        cores=cores,
        finalize=_flag(raw.get("finalize", finalize), f"{path}.finalize"),
        io_weight=_number(raw.get("io_weight", 1.0), f"{path}.io_weight"),
    )


FILES_KEYS = ("count", "size", "per_job", "layout")


def _job_files(raw, jobs: int, path: str) -> tuple[tuple[tuple[int, ...], ...], int, int]:
    """A campaign's ``files`` (see the module's docstring): each job's file numbers, the count, the size."""
    if raw is None:
        return (), 0, 0
    if not isinstance(raw, dict):
        _fail(path, "expected {count, size, per_job, layout}")
    for key in raw:
        if key not in FILES_KEYS:
            _fail(f"{path}.{key}", f"unknown key (valid: {', '.join(FILES_KEYS)})")
    count = _count(raw.get("count"), f"{path}.count")
    size = int(_number(raw.get("size", 0), f"{path}.size"))
    per_job = _count(raw.get("per_job", 1), f"{path}.per_job")
    layout = raw.get("layout", "shared")
    if layout == "shared":
        if per_job != 1:
            _fail(f"{path}.per_job", "a shared layout gives each job one file: per_job must be 1")
        return tuple((i * count // jobs,) for i in range(jobs)), count, size
    if layout == "contiguous":
        starts = (i * count // jobs for i in range(jobs))
        return tuple(tuple(range(start, min(start + per_job, count))) for start in starts), count, size
    _fail(f"{path}.layout", f"expected shared or contiguous, not {layout!r}")


def _fewest_cores(path: str, clusters: dict[str, ClusterSpec], requests: dict[str, tuple[str, str]]) -> int:
    """The cores a job of the campaign holds where it takes the fewest, given its (resources, properties) on
    each of its clusters. A campaign no cluster can ever run is refused here: the simulation would wait
    for it until max_time."""
    cores, refusals = [], []
    for name, asked in requests.items():
        need = clusters[name].need(*request(*asked, path))
        if need.possible:
            cores.append(need.slots)
        else:
            refusals.append(refusal(clusters[name], *asked, need))
    if not cores:
        _fail(path, f"no cluster can ever run its jobs ({'; '.join(refusals)})")
    return min(cores)


def _config(raw) -> dict[str, object]:
    """The simulated state's configuration, ``grid config`` keys to values (checked when the simulation
    applies them)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        _fail("config", f"expected a mapping of grid config keys to values, not {raw!r}")
    return {str(key): value for key, value in raw.items()}


def parse(data: dict, *, base_dir: Path = Path("."), seed: int | None = None) -> Scenario:
    """The scenario ``data`` describes. ``seed`` (default: its ``seed``, else 1) draws the whole world: the
    campaigns' durations here, the clusters' luck in the simulation."""
    seed = int(data.get("seed", 1)) if seed is None else seed
    rng = random.Random(seed)
    clusters = [_cluster(raw, i) for i, raw in enumerate(data.get("clusters") or [])]
    if not clusters:
        _fail("clusters", "at least one cluster is needed")
    users = {
        str(u): _number((v or {}).get("share", 1.0), f"users.{u}.share", 1e-9)
        for u, v in (data.get("users") or {}).items()
    }
    finalize = _flag(data.get("finalize", False), "finalize")  # every campaign's default
    plans = [_campaign(raw, i, clusters, rng, finalize) for i, raw in enumerate(data.get("campaigns") or [])]
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
        short_cutoff=_number(data.get("short_cutoff", 600.0), "short_cutoff"),
        config=_config(data.get("config")),
        max_time=_number(data.get("max_time", 90 * 86400.0), "max_time", 1.0),
        seed=seed,
        fix_delay=_number(data.get("fix_delay", 600.0), "fix_delay"),
        min_gap=_number(data.get("min_gap", 5.0), "min_gap"),
        poll=_number(data.get("poll", 1.0), "poll", 1e-3),
        stall=_number(data.get("stall", 86400.0), "stall", 1.0),
        file_server=_file_server(data.get("file_server"), {c.name for c in clusters}),
    )
