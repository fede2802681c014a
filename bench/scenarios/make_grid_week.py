#!/usr/bin/env python3
"""Write grid-week.yaml: 20 clusters of 50 to 2,000 slots, 40 users, 400 campaigns of 10 to 100,000 jobs
(about 4 to 5 million jobs) over a week, with local load that preempts best-effort jobs and two outages.
Deterministic: the same file every time."""

import random
from pathlib import Path

import yaml

WEEK = 7 * 86400


def main() -> None:
    rng = random.Random(2026)
    clusters = []
    for i in range(20):
        slots = round(50 * (2000 / 50) ** (i / 19))  # 50 .. 2000, log-spaced
        cluster = {
            "name": f"cluster{i:02d}",
            "slots": slots,
            "speed": round(rng.uniform(0.7, 1.5), 2),
            "delay": rng.choice([0, 5, 10, 30]),
            "failure": rng.choice([0.0, 0.001, 0.01]),
        }
        if i % 4 == 1:
            cluster["local_load"] = {"rate": round(slots / 50000, 5), "duration": 3600, "size": 4}
        clusters.append(cluster)
    clusters[5]["outages"] = [[2 * 86400, 2 * 86400 + 6 * 3600]]
    clusters[17]["outages"] = [[4 * 86400, 4 * 86400 + 3 * 3600]]
    users = {f"user{u:02d}": {"share": rng.choice([1, 1, 1, 2, 4])} for u in range(40)}
    campaigns = []
    for c in range(400):
        jobs = min(100_000, round(10 ** rng.uniform(1, 5.15)))  # 10 .. 100,000, about log-uniform
        short = rng.random() < 0.7
        mean = rng.uniform(20, 120) if short else rng.uniform(600, 3600)
        campaigns.append(
            {
                "name": f"camp{c:03d}",
                "user": f"user{rng.randrange(40):02d}",
                "arrival": round(rng.uniform(0, WEEK * 0.8)),
                "jobs": jobs,
                "duration": {"dist": "exponential", "mean": round(mean, 1)},
            }
        )
    scenario = {
        "name": "grid-week",
        "period": 60,
        # A job ends every few seconds on this grid: waking at each end would nearly double the passes and the
        # run's wall time (1.85x the passes, 1.6x the wall time over its first 12 hours), so the week keeps to
        # its period; the smaller scenarios exercise the wake-up.
        "min_gap": 60,
        "poll": 5,
        "short_cutoff": 300,
        "seed": 1,
        "max_time": 30 * 86400,
        "clusters": clusters,
        "users": users,
        "campaigns": campaigns,
    }
    out = Path(__file__).with_name("grid-week.yaml")
    out.write_text("# written by make_grid_week.py: do not edit by hand\n" + yaml.safe_dump(scenario, sort_keys=False))
    print(f"{out}: {sum(c['jobs'] for c in campaigns):,} jobs, {sum(c['slots'] for c in clusters):,} slots")


if __name__ == "__main__":
    main()
