"""The flow step of the metascheduler stage: each usable cluster's allowance for this pass.

For each cluster that answered, the pass builds a :class:`~cigri.flow.Reading` from the store and the
cluster's capacity: cigri's jobs waiting and running there (in slots, and per campaign in jobs), the slots
of its queued jobs the updator saw start in this pass, the slots expected to free during one period
(running slots x period / mean job duration, each campaign's mean from its terminated jobs), the
cluster's ``queue_depth``, whether its queue is stalled, and the configured sensor: the RM's count of
cigri's waiting jobs, or the 1-minute load of a file server read through the cluster's adapter
(``server_load``). A sensor that fails closes the cluster for the pass with an event, as any failing
call does; the other clusters are served.

On a stalled cluster (cigri's queued jobs do not start there, or its RM says it is under stress) the
pass fills the free slots and queues nothing, whatever the strategy answers (its state is kept): the
stall ends only when one of cigri's jobs starts there, so a strategy that sent nothing at all (``submit``
0, every tap closed) would keep the cluster unused for good.

The cluster's flow strategy answers an :class:`~cigri.flow.Allowance` from the reading and its own
state (``ctx.allowed``, nikita's threshold, follows from it); the state is kept per (strategy, cluster)
in the store's strategy states under ``flow.STRATEGY.CLUSTER``
with the time of the reading and the jobs each campaign was sent (the next reading's period and
``sent``); it is written with the pass's launches (:func:`remember`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from .. import config
from ..errors import AdapterError
from ..flow import Allowance, CampaignFlow, Reading
from ..model import Capacity
from ..scheduling import Assignment
from .context import Context, log
from .health import cluster_failed


def state_name(strategy: str, cluster: str) -> str:
    """The strategy state row of a flow strategy on a cluster."""
    return f"flow.{strategy}.{cluster}"


def allow(
    ctx: Context,
    capacities: Mapping[str, Capacity],
    stalled: Callable[[str], bool],
    candidates: Mapping[str, set[int]],
) -> dict[str, Allowance]:
    """Each cluster's allowance for this pass (kept in ``ctx.allowances``); a cluster whose sensor fails
    is left out, closed for the pass. ``candidates``: the running campaigns that may send jobs to each
    cluster (listed in its reading with those that have jobs there or were sent some)."""
    flows = config.cluster_flows(ctx.store, list(capacities), ctx.flow)
    states = ctx.store.strategy_states()
    now = ctx.clock.now()
    for name, capacity in capacities.items():
        chosen = flows[name]
        adapter = ctx.adapter(name)
        try:
            sensor = float(capacity.queued) if chosen.host is None else _server_load(ctx, name, chosen.host)
        except AdapterError as exc:
            cluster_failed(ctx, name, exc)
            continue
        depth = int(getattr(adapter, "queue_depth", 0) or 0)
        row = state_name(chosen.strategy.name, name)
        kept = states.get(row, {})
        previous = kept.get("at")
        reading = _reading(
            ctx,
            name,
            capacity,
            candidates=candidates.get(name, set()),
            now=now,
            period=0.0 if previous is None else max(0.0, now - previous),
            sent={int(k): v for k, v in kept.get("sent", {}).items()},
            sensor=sensor,
            depth=depth,
            reference=chosen.reference,
            stalled=stalled(name) or bool(getattr(adapter, "stressed", False)),
        )
        allowance, state = chosen.strategy.allow(reading, dict(kept.get("state", {})))
        if reading.stalled:  # free slots only: the stall ends when one of cigri's jobs starts there
            allowance = Allowance(0)
        ctx.allowances[name] = allowance
        ctx.periods[name] = reading.period
        # nikita's threshold: what may wait once this pass's jobs are sent (its free slots too: a job sent
        # to a free slot may wait a moment); a stalled queue is the take-back's, not a flood to kill
        ctx.allowed[name] = capacity.free + (depth if reading.stalled else allowance.queue)
        ctx.flow_rows[name] = (row, {"at": now, "state": state})
        log.debug("flow: %s: %s -> %s", name, reading, allowance)
    return ctx.allowances


def _server_load(ctx: Context, name: str, host: str) -> float:
    """The 1-minute load of the file-server ``host``, read through the cluster's adapter."""
    adapter = ctx.adapter(name)
    try:
        call = adapter.start("server_load", host)
    except AttributeError:  # an adapter without a transport (checked when the sensor is set)
        raise AdapterError(f"{name}: its adapter cannot read the load of {host}") from None
    return float(call.result())


def _reading(
    ctx: Context,
    name: str,
    capacity: Capacity,
    *,
    candidates: set[int],
    depth: int,
    now: float,
    period: float,
    sent: dict[int, int],
    sensor: float,
    reference: float | None,
    stalled: bool,
) -> Reading:
    """The cluster as its flow strategy sees it (cigri's jobs there from the store)."""
    waiting: dict[int, int] = {}
    running: dict[int, int] = {}
    waiting_slots = running_slots = 0
    for campaign_id, queued, started in ctx.store.grid_counts(name):
        slots = ctx.settings(campaign_id)[name]["_slots"]
        if queued:
            waiting[campaign_id] = queued
            waiting_slots += queued * slots
        if started:
            running[campaign_id] = started
            running_slots += started * slots
    ctx.running[name] = running  # the metascheduler's drain rates read them too
    expected = 0.0
    for campaign_id, jobs in running.items():
        mean = _mean_duration(ctx, campaign_id)
        if mean:
            expected += jobs * ctx.settings(campaign_id)[name]["_slots"] * period / mean
    campaigns = sorted({*candidates, *waiting, *running, *sent})
    return Reading(
        cluster=name,
        now=now,
        period=period,
        slots=capacity.total,
        free=capacity.free,
        waiting=waiting_slots,
        running=running_slots,
        started=ctx.started.get(name, 0),
        expected_ends=expected,
        depth=depth,
        sensor=sensor,
        reference=reference,
        stalled=stalled,
        campaigns=tuple(
            CampaignFlow(c, waiting.get(c, 0), running.get(c, 0), sent.get(c, 0), ctx.settings(c)[name]["_slots"])
            for c in campaigns
        ),
    )


def _mean_duration(ctx: Context, campaign_id: int) -> float | None:
    """The campaign's mean job duration from its terminated jobs (the oracle's word in a simulation
    that gives one, until a job ended)."""
    stats = ctx.store.stats(campaign_id)
    if stats["duration_n"]:
        return stats["duration_sum"] / stats["duration_n"]
    return ctx.oracle(campaign_id) if ctx.oracle is not None else None


def remember(ctx: Context, launches: Sequence[Assignment]) -> None:
    """Keep each cluster's flow state, with the jobs each campaign was sent there by this pass (in the
    caller's transaction)."""
    sent: dict[str, dict[int, int]] = defaultdict(dict)
    for launch in launches:
        sent[launch.cluster][launch.campaign_id] = sent[launch.cluster].get(launch.campaign_id, 0) + launch.jobs
    for name, (row, kept) in ctx.flow_rows.items():
        ctx.store.set_strategy_state(row, {**kept, "sent": {str(c): n for c, n in sent[name].items()}})
    ctx.flow_rows.clear()
