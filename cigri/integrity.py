"""``grid admin check``: the state's invariants, checked without changing anything.

Each check is a name and a function of the store that returns one sentence per problem. They report only
what no pass of the almighty would ever repair: a pass killed anywhere leaves work the next pass finishes
(a batch being submitted, a kill asked and not yet made, a flag not yet cleared), and that is consistent.
The queries are the store's (:mod:`cigri.store.integrity`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .store import Store, migrations
from .wording import counted


@dataclass(frozen=True)
class Problem:
    check: str  # the name of the check that found it
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


def _sqlite(store: Store) -> list[str]:
    """SQLite's own PRAGMA integrity_check finds the file sound."""
    return [f"PRAGMA integrity_check: {line}" for line in store.sqlite_problems()]


def _migrations(store: Store) -> list[str]:
    """Every migration of this cigri applied, none unknown (a newer cigri's)."""
    applied = store.migrations_state()
    known = [name for name, _ in migrations.MIGRATIONS]
    problems = [f"{name} not applied" for name in known if name not in applied]
    problems += [f"{name} applied, unknown to this version of cigri" for name in applied if name not in known]
    return problems


def _values(store: Store) -> list[str]:
    """States, codes and flags hold only values cigri writes."""
    return [
        f"{table}.{column} holds {value!r} in {n} row{'s' if n > 1 else ''}: cigri writes no such value"
        for table, column, value, n in store.unknown_values()
    ]


def _counts(store: Store) -> list[str]:
    """job_counts and job_places (kept with every change of a job's state) and nb_jobs match the jobs."""
    problems = [
        f"campaign {campaign}: job_counts says {kept} {state}, the jobs {real}"
        for campaign, state, kept, real in store.miscounted()
    ]
    problems += [
        f"campaign {campaign}: job_places says {kept} {state} on {cluster or 'no cluster'}, the jobs {real}"
        for cluster, state, campaign, kept, real in store.miscounted_places()
    ]
    problems += [
        f"campaign {campaign}: nb_jobs says {said}, it has {counted(real, 'job')}"
        for campaign, said, real in store.misnumbered_campaigns()
    ]
    return problems


def _references(store: Store) -> list[str]:
    """Rows name campaigns, jobs and clusters that exist."""
    return [
        f"{table} {row}: {column} {value!r} names nothing that exists"
        + (" in its campaign" if (table, column) == ("events", "job_id") else "")
        for table, row, column, value in store.dangling()
    ]


def _placement(store: Store) -> list[str]:
    """Every active job is on a cluster of its campaign."""
    return [
        f"job {job} is {state} " + (f"on {cluster}, not a cluster of its campaign" if cluster else "on no cluster")
        for job, state, cluster in store.misplaced()
    ]


def _remote_ids(store: Store) -> list[str]:
    """Every queued or running job has its remote id."""
    return [f"job {job} is {state} with no remote id" for job, state in store.without_remote_id()]


def _batches(store: Store) -> list[str]:
    """Every job being submitted is in a batch the runner submits."""
    return [
        f"job {job} is launching in "
        + (f"batch {batch} ({state}), which the runner no longer submits" if state else f"no batch ({batch})")
        for job, batch, state in store.stranded_launches()
    ]


def _campaigns(store: Store) -> list[str]:
    """A campaign over has an end time, no job waiting or active (bar kills)."""
    problems = [
        f"campaign {campaign} is {state} with {n} job{'s' if n > 1 else ''} {job_state}"
        + (" not to be killed" if job_state != "to_launch" and state == "cancelled" else "")
        for campaign, state, job_state, n in store.unsettled_campaigns()
    ]
    problems += [
        f"campaign {campaign} is {state} " + ("with an end time" if ended else "with no end time")
        for campaign, state, ended in store.misdated_campaigns()
    ]
    return problems


def _flags(store: Store) -> list[str]:
    """No kill is asked that nikita can never make."""
    return [
        f"job {job} is to be killed, {state} with no remote id: nikita can never kill it"
        for job, state in store.unkillable()
    ]


def _replicas(store: Store) -> list[str]:
    """Every live replica can be followed and killed."""
    return [f"replica {replica} ({state}): {what}" for replica, state, what in store.bad_replicas()]


def _orphans(store: Store) -> list[str]:
    """Every orphan copy can be cancelled."""
    return [f"orphan {orphan} on {cluster}: {what}" for orphan, cluster, what in store.bad_orphans()]


def _events(store: Store) -> list[str]:
    """Open events have no close time, closed ones have one."""
    return [
        f"event {event} is {state} " + ("with a close time" if closed else "with no close time")
        for event, state, closed in store.misdated_events()
    ]


CHECKS: dict[str, Callable[[Store], list[str]]] = {
    "sqlite": _sqlite,
    "migrations": _migrations,
    "values": _values,
    "counts": _counts,
    "references": _references,
    "placement": _placement,
    "remote-ids": _remote_ids,
    "batches": _batches,
    "campaigns": _campaigns,
    "flags": _flags,
    "replicas": _replicas,
    "orphans": _orphans,
    "events": _events,
}


def described() -> list[tuple[str, str]]:
    """(name, what it checks) of every check, for the command's help."""
    return [(name, (run.__doc__ or "").strip()) for name, run in CHECKS.items()]


def check(store: Store) -> list[Problem]:
    """Every problem every check finds, in the order of :data:`CHECKS` (none: the state is consistent). The
    checks after ``migrations`` need the schema: a state missing a migration is reported on that alone."""
    first = ("sqlite", "migrations")
    problems = [Problem(name, message) for name in first for message in CHECKS[name](store)]
    if problems:
        return problems
    return [Problem(name, message) for name, run in CHECKS.items() if name not in first for message in run(store)]
