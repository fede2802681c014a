"""``cursors``: the redesign of BOINC's locality scheduling (designed upstream, never built), for campaigns
whose jobs read contiguous ranges of a sequence of files, so that neighbouring job ids share files.

The clusters of a campaign are split into *teams*, each owning a *cursor*: a contiguous range of job ids
``[first, last]``. Per campaign and per pass, with ``speed`` a cluster's jobs per second (its slots over
Spritz's job duration there) and a team's speed the sum of its members' present this pass:

- ``est_time_left(cursor)`` = waiting jobs in its range / its team's speed (infinite for a team with no
  speed and work left, zero without work left);
- at the start, the job range is split into one cursor per cluster, sizes proportional to their speeds
  (the redesign's "start each host at a different point in the job space, separated according to their
  speeds"); teams of one cluster: a cluster holds many hosts sharing one cache, the unit whose files count;
- a cluster new to the campaign joins the cursor with the most time left if its team stays *balanced* (no
  member faster than the rest combined, the redesign's rule; one member is balanced), else it takes that
  cursor's upper part, sized by its share of the speed, as a cursor of its own;
- a cluster that wants jobs moves when its cursor's time left is under half the largest's, taking the upper
  part of the largest by its share of speed as a cursor of its own (the redesign joins the team instead;
  splitting keeps ranges disjoint, so that the mover does not stage the files that team is reading); it
  never leaves a cursor it alone serves while jobs wait there, so it finishes its range first;
- inside a cursor, jobs go out in increasing id order.

The state (JSON, kept by the cycle through the strategy-state mechanism) is ``{"cursors": [{"first": ID,
"last": ID, "team": [CLUSTER, ...]}, ...]}``, ranges in increasing order and covering every waiting job:
the first and the last ranges stretch to jobs added outside them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from . import evaluates
from . import inputs as read
from .locality import Holdings, PickerState, Picks, read_clusters, read_exclude, read_jobs, register, take


@dataclass
class Cursor:
    first: int
    last: int
    team: list[str]

    def holds(self, job_id: int) -> bool:
        return self.first <= job_id <= self.last


def balanced(speeds: list[float]) -> bool:
    """The redesign's rule for a team: its fastest member no faster than the others together."""
    return len(speeds) <= 1 or max(speeds) <= sum(speeds) - max(speeds)


@register
class Cursors:
    """Teams of clusters over contiguous job ranges (see the module's docstring for the exact rules)."""

    name = "cursors"

    def pick(self, holdings: Holdings, wanted: Mapping[str, int], state: PickerState) -> tuple[Picks, PickerState]:
        ids = [job.job_id for job in holdings.jobs]
        picks: Picks = {cluster: [] for cluster in wanted}
        if not ids:
            return picks, dict(state)
        speeds = {name: max(0.0, speed) for name, speed in holdings.speeds.items()}
        for cluster in wanted:
            speeds.setdefault(cluster, 0.0)
        cursors = _load(state) or _start(ids, speeds)
        cursors[0].first = min(cursors[0].first, ids[0])
        cursors[-1].last = max(cursors[-1].last, ids[-1])
        taken: set[int] = set()
        plan = _Plan(cursors, ids, speeds, taken)
        for cluster in speeds:
            if plan.cursor_of(cluster) is None:
                plan.place(cluster)
        for cluster, n in wanted.items():
            for _ in range(len(ids) + 1):  # each turn takes a job or moves the cluster onto a split-off part
                if n <= len(picks[cluster]):
                    break
                plan.consider_moving(cluster)
                cursor = plan.cursor_of(cluster)
                assert cursor is not None
                inside = (job_id for job_id in ids if cursor.holds(job_id))
                chosen = take(holdings, cluster, inside, n - len(picks[cluster]), taken)
                picks[cluster] += chosen
                if not chosen:
                    break  # its cursor has nothing it may take, and it does not move: no more this pass
        plan.drop_finished()
        return picks, {"cursors": [{"first": c.first, "last": c.last, "team": c.team} for c in plan.cursors]}


class _Plan:
    """The cursors of one campaign while a pass decides; ``taken`` jobs count as no longer waiting."""

    def __init__(self, cursors: list[Cursor], ids: list[int], speeds: Mapping[str, float], taken: set[int]):
        self.cursors = cursors
        self.ids = ids
        self.speeds = speeds
        self.taken = taken

    def cursor_of(self, cluster: str) -> Cursor | None:
        return next((c for c in self.cursors if cluster in c.team), None)

    def waiting(self, cursor: Cursor) -> list[int]:
        return [job_id for job_id in self.ids if cursor.holds(job_id) and job_id not in self.taken]

    def team_speed(self, cursor: Cursor) -> float:
        return sum(self.speeds.get(member, 0.0) for member in cursor.team)

    def time_left(self, cursor: Cursor) -> float:
        work = len(self.waiting(cursor))
        if not work:
            return 0.0
        speed = self.team_speed(cursor)
        return work / speed if speed > 0 else math.inf

    def largest(self) -> Cursor:
        """The cursor with the most time left (the earliest range on a tie)."""
        return max(self.cursors, key=lambda c: (self.time_left(c), -c.first))

    def place(self, cluster: str, join: bool = True) -> None:
        """A cluster with no cursor takes the one with the most time left: joins it (``join``, and the team
        stays balanced), or takes its upper part as a cursor of its own."""
        target = self.largest()
        if join and balanced([*(self.speeds.get(m, 0.0) for m in target.team), self.speeds.get(cluster, 0.0)]):
            target.team.append(cluster)
            return
        waiting = self.waiting(target)
        speed = self.speeds.get(cluster, 0.0)
        share = speed / (speed + self.team_speed(target)) if speed > 0 else 0.0
        give = round(len(waiting) * share)
        if give <= 0 or give >= len(waiting):
            target.team.append(cluster)  # nothing to split off, or all of it: share the cursor
            return
        cut = waiting[len(waiting) - give]
        upper = Cursor(cut, target.last, [cluster])
        target.last = cut - 1
        self.cursors.insert(self.cursors.index(target) + 1, upper)

    def consider_moving(self, cluster: str) -> None:
        """Move the cluster when its cursor's time left is under half the largest's, taking the upper part of
        the largest; never out of a cursor it alone serves while that has jobs waiting (they would wait for
        a cluster to come)."""
        current = self.cursor_of(cluster)
        assert current is not None
        target = self.largest()
        if target is current or not self.time_left(current) < 0.5 * self.time_left(target):
            return
        if current.team == [cluster] and self.waiting(current):
            return
        current.team.remove(cluster)
        self.place(cluster, join=False)

    def drop_finished(self) -> None:
        """Merge away cursors with no waiting job and no team: their range joins a neighbour's."""
        kept = []
        for cursor in self.cursors:
            if not cursor.team and not self.waiting(cursor) and len(self.cursors) > 1:
                if kept:
                    kept[-1].last = cursor.last
                continue
            if kept and kept[-1].last < cursor.first - 1:
                cursor.first = kept[-1].last + 1
            kept.append(cursor)
        if kept and kept[0].first > self.cursors[0].first:
            kept[0].first = self.cursors[0].first
        self.cursors = kept


def _start(ids: list[int], speeds: Mapping[str, float]) -> list[Cursor]:
    """One cursor per cluster over consecutive parts of the waiting jobs, sized by the clusters' speeds
    (equal parts when no speed is known), fastest first."""
    order = sorted(speeds, key=lambda name: (-speeds[name], name))
    if not order:
        return [Cursor(ids[0], ids[-1], [])]
    total = sum(speeds.values())
    weights = [speeds[name] / total if total > 0 else 1 / len(order) for name in order]
    cursors, start, done = [], 0, 0.0
    for index, (name, weight) in enumerate(zip(order, weights, strict=True)):
        done += weight
        end = len(ids) if index == len(order) - 1 else max(start, min(len(ids), round(done * len(ids))))
        if end > start:
            cursors.append(Cursor(ids[start], ids[end - 1], [name]))
            start = end
        elif cursors:
            cursors[-1].team.append(name)  # fewer jobs than clusters: it shares the last cursor
        else:
            cursors.append(Cursor(ids[0], ids[0], [name]))
    for before, after in itertools.pairwise(cursors):
        after.first = before.last + 1
    return cursors


def _load(state: PickerState) -> list[Cursor]:
    """The campaign's cursors from its state (none: a first pass, or a state it did not write)."""
    try:
        cursors = [Cursor(int(c["first"]), int(c["last"]), [str(m) for m in c["team"]]) for c in state["cursors"]]
    except (KeyError, TypeError, ValueError):
        return []
    return sorted(cursors, key=lambda c: c.first)


@evaluates("cursors")
def evaluate_cursors(scenario: Mapping[str, Any]) -> dict:
    """The teams-and-cursors redesign: which waiting jobs of one campaign each cluster takes, and the cursors
    after this pass.

    Input: "jobs": [{"id": N}, ...] the campaign's waiting jobs (files may be given, they are not read);
    "clusters": {NAME: {"wants": jobs it takes this pass (default 0), "speed": jobs per second (default 0),
    "exclude": [ID, ...]}} in turn order; "cursors": the state of the previous pass, [{"first": ID, "last": ID,
    "team": [NAME, ...]}, ...] (absent: the first pass, one cursor per cluster sized by speed). Rules:
    est_time_left = waiting jobs in the range / the team's speed; a new cluster joins the cursor with the most
    time left when the team stays balanced (no member faster than the rest combined), else takes its upper
    part by its share of speed; a cluster that wants jobs moves when its time left is under half the largest,
    taking the largest's upper part (never out of a cursor it alone serves while jobs wait there); jobs in
    increasing order inside a cursor. Output: {"picks": {NAME: [ID, ...]}, "cursors": [...]}.

    Example (first pass: A twice as fast as B gets the first two thirds of the jobs):
      {"jobs": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 5}, {"id": 6}],
       "clusters": {"A": {"wants": 2, "speed": 2}, "B": {"wants": 2, "speed": 1}}}
      -> {"picks": {"A": [1, 2], "B": [5, 6]}, "cursors": [{"first": 1, "last": 4, "team": ["A"]},
          {"first": 5, "last": 6, "team": ["B"]}]}
    """
    read.known(scenario, ("jobs", "clusters", "cursors"))
    jobs = read_jobs(scenario)
    wanted, items = read_clusters(scenario, ("wants", "speed", "exclude"))
    speeds = {name: read.number(item, "speed", f"clusters.{name}", 0) for name, item in items.items()}
    state: dict[str, Any] = {}
    if "cursors" in scenario:
        cursors = []
        for index, item in enumerate(read.sequence(scenario, "cursors")):
            path = f"cursors[{index}]"
            read.known(item, ("first", "last", "team"), path)
            first = read.integer(item, "first", path, minimum=None)
            last = read.integer(item, "last", path, minimum=None)
            if last < first:
                raise ConfigError(f"{path}.last: must be >= first ({first}), got {last}")
            team = read.sequence(item, "team", path, [])
            for position, member in enumerate(team):
                if member not in items:
                    raise ConfigError(f"{path}.team[{position}]: not a cluster of the scenario, got {member!r}")
            for position, member in enumerate(team):
                if any(member in earlier["team"] for earlier in cursors) or member in team[:position]:
                    raise ConfigError(f"{path}.team[{position}]: {member!r} is already in a team")
            if cursors and first <= cursors[-1]["last"]:
                raise ConfigError(f"{path}.first: overlaps the previous cursor (ranges in increasing order)")
            cursors.append({"first": first, "last": last, "team": team})
        state = {"cursors": cursors}
    picks, after = Cursors().pick(Holdings(jobs, speeds=speeds, exclude=read_exclude(items)), wanted, state)
    return {"picks": picks, "cursors": after["cursors"]}
