"""Repeating almighty passes: --loop and --until-done."""

from __future__ import annotations

import logging
from collections.abc import Callable

from . import campaigns as campaign_ops
from .clock import Clock
from .cycle import Cycle
from .errors import TimedOut
from .model import CampaignState

log = logging.getLogger("cigri.loop")

MIN_GAP = 0.05  # seconds between two passes, however busy the clusters
POLL = 0.02  # how often a waiting loop looks for cluster activity


def unfinished(cycle: Cycle) -> tuple[list[int], list[tuple[int, str]]]:
    """(campaigns still progressing, (campaign, reason) of those blocked on the user). A campaign whose
    outputs still wait to be gathered is progressing, unless the cluster holding them does not answer."""
    store = cycle.store
    going, blocked = [], []
    for campaign in store.campaigns(states=[CampaignState.IN_TREATMENT, CampaignState.PAUSED]):
        reason = campaign_ops.blocked_reason(store, campaign)
        (blocked.append((campaign.id, reason)) if reason else going.append(campaign.id))
    if store.has_outputs_due():
        for campaign_id, cluster, count in store.outputs_waiting():
            jobs = f"{count} job{'s' if count != 1 else ''}"
            if not store.has_cluster(cluster):
                blocked.append((campaign_id, f"outputs of {jobs} wait on cluster {cluster or '?'}, which is gone"))
            elif store.open_cluster_event(cluster) is not None:
                blocked.append((campaign_id, f"outputs of {jobs} wait on cluster {cluster}, which does not answer"))
            else:
                going.append(campaign_id)
    if store.jobs_to_kill():
        going.append(0)  # cancelled jobs still to kill
    return going, blocked


def run_passes(
    cycle: Cycle,
    clock: Clock,
    *,
    loop: bool,
    until_done: bool,
    period: float,
    timeout: float | None = None,
    on_pass: Callable[[Cycle], None] | None = None,
) -> list[tuple[int, str]]:
    """Run one pass, or repeat them; return the blocked campaigns when --until-done ends.
    With ``timeout``, give up (TimedOut) when passes are still needed after that many seconds."""
    give_up = None if timeout is None else clock.now() + timeout
    while True:
        started = clock.now()
        cycle.run()
        if on_pass:
            on_pass(cycle)
        if until_done:
            going, blocked = unfinished(cycle)
            if not going:
                return blocked
        elif not loop:
            return []
        if give_up is not None and clock.now() >= give_up:
            raise TimedOut(f"still running after {timeout:g} s")
        wait_for_news(cycle, clock, started, period)


def wait_for_news(
    cycle: Cycle, clock: Clock, started: float, period: float, *, min_gap: float = MIN_GAP, poll: float = POLL
) -> None:
    """Sleep until the period is over, or sooner once a cluster shows activity (the simulator, on its own
    clock, sets a coarser ``min_gap`` and ``poll``)."""
    clock.sleep(max(0.0, started + min_gap - clock.now()))
    while clock.now() < started + period:
        if cycle.news():
            return
        clock.sleep(poll)
