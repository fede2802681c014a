"""What the stages of the cycle share: the store, the clock, the patience, the bounded adapters, the
report of the pass, and the caches a pass (or the whole life of the cycle) keeps."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import config
from ..adapters import AdapterContext, ResourceManager, adapter_for
from ..calls import Bounded
from ..clock import Clock
from ..config import Patience
from ..flow import Allowance
from ..jdl import parse_resources, resource_slots
from ..prediction import BUCKETS, Predictor
from ..scheduling import MetaScheduler, Record
from ..store import Store

log = logging.getLogger("cigri.cycle")

STDERR_LINES = 5  # the end of a failed job's stderr quoted in its event


def job_slots(resources: str) -> int:
    """The slots (cores) one job takes: its nodes times the cores it asks on each."""
    nodes, per_node = resource_slots(parse_resources(resources, "resources"))
    return nodes * per_node


@dataclass
class PassReport:
    """What one pass did, stage by stage (also what the CLI prints with -v)."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, key: str, n: int = 1) -> None:
        if n:
            self.counts[key] += n


class Context:
    """The cycle's shared state. The adapters, the activity tokens, the campaigns' settings and which
    campaigns are choosy live as long as the cycle; :meth:`begin` resets what belongs to one pass."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        scheduler: MetaScheduler | None,
        forecaster: Predictor,
        adapters: Callable[[str], ResourceManager] | None,
        patience: Patience,
        oracle: Callable[[int], float | None] | None = None,
        flow: str | None = None,
    ):
        self.store = store
        self.clock = clock
        self.patience = patience
        self.scheduler = scheduler  # None: the configured strategies (cigri.config), read each pass
        self.forecaster = forecaster
        self.oracle = oracle  # campaign id -> its true mean job duration, given to the strategies as estimate
        self.report = PassReport()
        self.adapters: dict[str, Bounded] = {}  # every call into an adapter goes through cigri.calls
        self._factory = adapters or self._default_factory
        self.seen: dict[str, object] = {}  # each cluster's activity token when cigri last looked
        self.fresh: set[int] = set()  # batches recorded by this pass: no RM can hold them yet
        self.avoided: dict[tuple[int, str], int] = {}  # this pass: jobs of (campaign, cluster) avoiding it
        self.checkpointed: dict[tuple[int, str], int] = {}  # this pass: jobs of (campaign, cluster) resuming there
        self.choosy: set[int] = set()  # campaigns with more than one place: their jobs avoid clusters
        self.flow = flow  # None: the configured flow strategies (cigri.config), read each pass
        # this pass: slots of cigri's jobs each cluster's flow lets wait there, the free slots included (jobs
        # sent to free slots wait until their RM starts them); nikita kills the newest waiting beyond it
        self.allowed: dict[str, int] = {}
        self.slots: dict[str, int] = {}  # this pass: each cluster's slots, as its capacity said (packs spread on them)
        self.allowances: dict[str, Allowance] = {}  # this pass: what each cluster's flow strategy answered
        self.periods: dict[str, float] = {}  # this pass: seconds since each cluster's last flow reading (0: first)
        self.flow_rows: dict[str, tuple[str, dict]] = {}  # this pass: each cluster's flow state, to keep
        self.started: dict[str, int] = defaultdict(int)  # this pass: slots of cigri's queued jobs seen starting
        self.running: dict[str, dict[int, int]] = {}  # this pass: cigri's running jobs per cluster and campaign (flow)
        self.walltimes: dict[str, float] | None = None  # this pass: the shortest walltime on each cluster (nikita)
        # the latest end among the campaigns, and what those that ended last taught of the clusters' speeds,
        # per campaign (metasched reads them again when one more ended)
        self.remembered: tuple[float | None, list[tuple[int, Record]]] = (None, [])
        self._settings: dict[int, dict[str, dict]] = {}
        self._users: dict[int, str] = {}
        self._attempts: dict[int, int | None] = {}

    def begin(self) -> None:
        """A new pass: a new report, no batch recorded yet, every cluster open again."""
        self.report = PassReport()
        self.fresh.clear()
        self.allowed.clear()
        self.allowances.clear()
        self.periods.clear()
        self.flow_rows.clear()
        self.started.clear()
        self.running.clear()
        self.walltimes = None
        for adapter in self.adapters.values():
            adapter.reopen()

    @property
    def bucket(self) -> float:
        """The width in seconds of the buckets Spritz counts terminations in (its window in BUCKETS)."""
        return self.forecaster.window / BUCKETS

    def _default_factory(self, name: str) -> ResourceManager:
        return adapter_for(self.store.cluster(name), AdapterContext(self.store.directory, self.clock))

    def adapter(self, name: str) -> Bounded:
        if name not in self.adapters:
            self.adapters[name] = Bounded(name, self._factory)
        return self.adapters[name]

    def close(self) -> None:
        for adapter in self.adapters.values():
            adapter.close()
        self.adapters.clear()

    def look(self, cluster: str) -> None:
        """Remember the cluster's activity token: what it does from now on is news to a waiting loop."""
        self.seen[cluster] = self.adapter(cluster).activity()

    def watch(self, cluster: str) -> None:
        """Before submitting: what the cluster does next is news to a waiting loop."""
        if cluster not in self.seen:
            self.look(cluster)

    def settings(self, campaign_id: int) -> dict[str, dict]:
        """A campaign's settings per cluster (they never change after submission: read once per cycle),
        with the slots a job takes as "_slots"."""
        if campaign_id not in self._settings:
            settings = {n: i["settings"] for n, i in self.store.campaign_clusters(campaign_id).items()}
            for value in settings.values():
                value["_slots"] = job_slots(value["resources"])
            self._settings[campaign_id] = settings
        return self._settings[campaign_id]

    def max_attempts(self, campaign_id: int) -> int:
        """How often a job (or a prologue or epilogue) of the campaign may run: its JDL's ``max_attempts``,
        else the configured ``resubmit.max_attempts``."""
        if campaign_id not in self._attempts:
            self._attempts[campaign_id] = self.store.campaign(campaign_id).jdl.get("max_attempts")
        given = self._attempts[campaign_id]
        return given if given is not None else int(config.resubmit_value(self.store.settings(), config.MAX_ATTEMPTS))

    def user(self, campaign_id: int) -> str:
        """The campaign's user (it never changes: read once per cycle)."""
        if campaign_id not in self._users:
            self._users[campaign_id] = self.store.campaign(campaign_id).user
        return self._users[campaign_id]

    def charge(self, cluster: str, held: Sequence[tuple[int, float]]) -> None:
        """Add to users' decayed usage the slot-seconds of jobs that held slots on the cluster, (campaign,
        seconds) each (in the caller's transaction)."""
        if held:
            per = {c: (self.user(c), self.settings(c)[cluster]["_slots"]) for c in {c for c, _ in held}}
            rows = [(per[c][0], per[c][1] * seconds) for c, seconds in held]
            self.store.add_usage(rows, self.clock.now(), config.half_life(self.store.settings()))

    def batch_key(self, *parts: object) -> str:
        """The name of a submission on its RM, unique to this cigri instance: a later pass finds it by it."""
        return ".".join(["cigri", self.store.instance, *map(str, parts)])

    def avoiding(self, cluster: str) -> tuple[str, float]:
        """A job the cluster killed or held back is not sent there again for a while."""
        return cluster, self.clock.now() + self.patience.avoid
