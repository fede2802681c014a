#!/usr/bin/env python3
"""The cost of one metascheduler decision, for every registered strategy (issue 10: < 50 ms over 1,000
campaigns x 100 clusters).

    .venv/bin/python bench/run_decision.py               # 1,000 campaigns x 100 clusters, median of 21 runs
    .venv/bin/python bench/run_decision.py --runs 5 --campaigns 200 --clusters 20

Builds one seeded, busy snapshot: every campaign usable on every cluster (the worst case for a strategy that
looks at each (campaign, cluster) pair), 1 % test campaigns, estimates from seconds to hours (a tenth with
none yet), clusters of 64 to 2,048 slots with some free slots, a queue allowance and hundreds of cigri's jobs
each. Times :func:`cigri.scheduling.decide` (test campaigns first, then the strategy) with default options and
the state of one earlier decision, in this process, prints a markdown table and writes it in its section of
docs/benchmarks.md (``--output``).
"""

from __future__ import annotations

import platform
import random
import time

from harness import arguments, cpu_model, med, stamp, write_section

from cigri.model import CampaignType
from cigri.scheduling import (
    CampaignView,
    ClusterView,
    Demand,
    GridJob,
    Snapshot,
    decide,
    metascheduler,
    registry,
)

TARGET_MS = 50.0
NOW = 1_000_000.0


def snapshot(campaigns: int, clusters: int, seed: int = 10) -> Snapshot:
    rng = random.Random(seed)
    names = [f"cluster{i:03d}" for i in range(clusters)]
    views = []
    for i, name in enumerate(names):
        slots = rng.choice([64, 128, 256, 512, 1024, 2048])
        jobs = tuple(
            GridJob(
                job_id=i * 10_000 + j,
                campaign_id=rng.randrange(campaigns),
                slots=rng.choice([1, 1, 1, 2, 4]),
                submitted_at=NOW - rng.uniform(0, 3600),
                started_at=None if rng.random() < 0.2 else NOW - rng.uniform(0, 3600),
            )
            for j in range(rng.randrange(100, 500))
        )
        free = rng.randrange(0, max(1, slots // 10))
        views.append(ClusterView(name, free, rng.randrange(0, 50), slots=slots, used=slots - free, jobs=jobs))
    views_campaigns = []
    for cid in range(campaigns):
        test = rng.random() < 0.01
        waiting = 1 if test else rng.randrange(1, 10_000)
        spj = rng.choice([1, 1, 1, 2, 4])
        estimate = None if rng.random() < 0.1 else rng.choice([rng.uniform(1, 600), rng.uniform(600, 36_000)])
        views_campaigns.append(
            CampaignView(
                id=cid,
                type=CampaignType.TEST if test else CampaignType.DEFAULT,
                user=f"user{cid % 37}",
                submitted_at=NOW - rng.uniform(0, 86_400),
                waiting=waiting,
                demands={name: Demand(spj, 1 if test else waiting) for name in names},
                priority=rng.randrange(3),
                total=waiting + rng.randrange(0, 1000),
                estimate=estimate,
                confidence=0 if estimate is None else rng.randrange(0, 50),
            )
        )
    usage = {f"user{u}": rng.uniform(0, 1e7) for u in range(37)}
    return Snapshot(NOW, tuple(views), tuple(views_campaigns), usage)


def time_strategy(name: str, shot: Snapshot, runs: int) -> tuple[float, float, int]:
    """Median and worst wall milliseconds of ``decide`` and the jobs it launches, given the state the strategy
    left after one decision on the same snapshot (a cycle always carries its state)."""
    strategy = metascheduler(name)
    state = decide(strategy, shot, {}).state
    times = []
    jobs = 0
    for _ in range(runs):
        start = time.perf_counter()
        decision = decide(strategy, shot, state)
        times.append((time.perf_counter() - start) * 1000)
        jobs = sum(a.jobs for a in decision.launches)
    return med(times), max(times), jobs


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--runs", type=int, default=21, help="decisions timed per strategy; the median is kept (21)")
    parser.add_argument("--campaigns", type=int, default=1000, help="campaigns in the snapshot (1,000)")
    parser.add_argument("--clusters", type=int, default=100, help="clusters in the snapshot (100)")
    args = parser.parse_args()
    shot = snapshot(args.campaigns, args.clusters)
    free = sum(c.free for c in shot.clusters)
    grid_jobs = sum(len(c.jobs) for c in shot.clusters)
    lines = [
        f"One decision over {args.campaigns:,} campaigns x {args.clusters} clusters ({free:,} free slots, "
        f"{grid_jobs:,} grid jobs on the clusters), median of {args.runs} runs, Python "
        f"{platform.python_version()}; target < {TARGET_MS:g} ms.",
        "",
        "| strategy | median ms | worst ms | jobs launched | target |",
        "|---|---:|---:|---:|---|",
    ]
    for name in sorted(registry()):
        median, worst, jobs = time_strategy(name, shot, args.runs)
        verdict = "met" if median < TARGET_MS else "missed"
        lines.append(f"| {name} | {median:.1f} | {worst:.1f} | {jobs:,} | {verdict} |")
    table = "\n".join(lines)
    print(table)
    body = f"""
## One metascheduler decision (`bench/run_decision.py`)

The cost of `cigri.scheduling.decide` (test campaigns first, then the strategy) on one seeded busy snapshot:
every campaign usable on every cluster, estimates from seconds to hours, clusters of 64 to 2,048 slots with
hundreds of cigri's jobs each. Run: {stamp(python=False)}, {cpu_model()}.

{table}
"""
    write_section(args.output, "bench/run_decision.py", body)


if __name__ == "__main__":
    main()
