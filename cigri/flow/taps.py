"""``taps``: CiGri v3's flow control, one tap per campaign on each cluster.

**Origin.** CiGri v3's runner (``../shared/anchors/cigri.md``, "Flow control"; its ``Tap`` class and
``RUNNER_*`` settings) gives each campaign a tap on each cluster: a rate, the jobs submitted at once (3 at
first, ``RUNNER_DEFAULT_INITIAL_NUMBER_OF_JOBS``). After a submission that used its tap the rate becomes
int(rate x 1.5) (``RUNNER_TAP_INCREASE_FACTOR``), at most 100 (``RUNNER_TAP_INCREASE_MAX``). The tap closes
while the cluster shows a waiting job of the campaign, keeping its rate; it reopens when none waits, with
int(rate / 1.5) (never below the initial rate) unless it was closed for less than the grace period
(``RUNNER_TAP_GRACE_PERIOD``, 60 s: the cluster may just need a moment to start the jobs). A cluster under
stress gets no new jobs.

**Here**, at each pass, for each campaign of the reading (the cycle lists every campaign that may send to
the cluster; a campaign not listed loses its tap): a new campaign's tap opens at ``initial``; a campaign
with jobs waiting there has its tap closed (cap 0); an open tap whose campaign's jobs sent by the previous
pass all got in (``sent`` > 0, none waiting) grows, if that submission used it (rate < sent x factor + 1);
a closed tap with no job waiting reopens (:func:`tap_reopen` if it was closed for ``grace`` seconds or
more). ``Allowance.campaigns`` caps each campaign at its open tap's rate, in jobs. ``Allowance.queue``, the
slots that may wait (nikita's threshold), is the learnt rates of all the cluster's taps, open or closed, in
slots (rate x the campaign's slots per job), never above a set ``queue_depth``. A ``stalled`` cluster (its
queued jobs do not start, or its RM reports stress) gets nothing, and its taps stay as they were. The
sensor is not used; ``Allowance.submit`` is not set.

The state, per cluster: ``{"taps": {"<campaign id>": {"rate": jobs, "closed_at": time or null}}}``.

Options: ``initial`` (jobs >= 1, default 3), ``factor`` (> 1, default 1.5), ``max`` (jobs >= ``initial``,
default 100), ``grace`` (seconds >= 0, default 60).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..scheduling import inputs
from . import Allowance, CampaignFlow, Reading, State, register, within_depth

INITIAL, FACTOR, MAX, GRACE = 3, 1.5, 100, 60.0


def tap_increase(rate: int, factor: float, most: int) -> int:
    """The rate after a submission that went well: int(rate x factor), at most ``most``."""
    return min(most, int(rate * factor))


def tap_reopen(rate: int, factor: float, initial: int) -> int:
    """The rate of a tap reopening after its grace: int(rate / factor), at least ``initial``."""
    return max(initial, int(rate / factor))


@register
class Taps:
    name = "taps"

    def __init__(self, initial: int = INITIAL, factor: float = FACTOR, most: int = MAX, grace: float = GRACE):
        self.initial = initial
        self.factor = factor
        self.most = most
        self.grace = grace

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> Taps:
        path = f"flow.{cls.name}"
        inputs.known(options, ("initial", "factor", "max", "grace"), path, "option")
        initial = inputs.integer(options, "initial", path, INITIAL, minimum=1)
        factor = inputs.number(options, "factor", path, FACTOR)
        if factor <= 1:
            raise ConfigError(f"{path}.factor: must be > 1, got {options['factor']!r}")
        most = inputs.integer(options, "max", path, MAX, minimum=1)
        if most < initial:
            raise ConfigError(f"{path}.max: must be >= initial ({initial}), got {most!r}")
        return cls(initial, factor, most, inputs.number(options, "grace", path, GRACE))

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]:
        taps = state.get("taps", {})
        if reading.stalled:
            return Allowance(0, campaigns={c.campaign_id: 0 for c in reading.campaigns}), state
        caps: dict[int, int] = {}
        after: dict[str, dict] = {}
        queue = 0
        for campaign in reading.campaigns:
            key = str(campaign.campaign_id)
            tap = self.turn(taps.get(key, {"rate": self.initial, "closed_at": None}), campaign, reading.now)
            after[key] = tap
            caps[campaign.campaign_id] = 0 if tap["closed_at"] is not None else tap["rate"]
            queue += tap["rate"] * campaign.slots
        return Allowance(within_depth(queue, reading.depth), campaigns=caps), {"taps": after}

    def turn(self, tap: dict, campaign: CampaignFlow, now: float) -> dict:
        """The campaign's tap after this pass's reading."""
        rate, closed_at = tap["rate"], tap["closed_at"]
        if campaign.waiting > 0:
            return {"rate": rate, "closed_at": now if closed_at is None else closed_at}
        if closed_at is not None and now - closed_at >= self.grace:
            rate = tap_reopen(rate, self.factor, self.initial)
        elif closed_at is None and campaign.sent > 0 and rate < campaign.sent * self.factor + 1:
            rate = tap_increase(rate, self.factor, self.most)
        return {"rate": rate, "closed_at": None}
