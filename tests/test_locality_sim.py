"""The job pickers in the simulator: the bytes the simulated clusters stage (the world's own count) under
each picker, on a small file-heavy campaign."""

from __future__ import annotations

import pytest

from cigri.sim.run import simulate
from cigri.sim.scenario import parse


def staged(picker: str, layout: str) -> tuple[int, int]:
    """(bytes staged on the grid, jobs done) for the picker on two clusters, 48 jobs of 10 s over 8 files."""
    files = {"count": 8, "size": 1000, "layout": layout, **({"per_job": 2} if layout == "contiguous" else {})}
    data = {
        "name": "locality",
        "period": 10,
        "seed": 1,
        "clusters": [{"name": "a", "slots": 4}, {"name": "b", "slots": 2}],
        "config": {"locality": picker},
        "campaigns": [{"name": "c", "jobs": 48, "duration": {"dist": "uniform", "min": 5, "max": 15}, "files": files}],
    }
    result = simulate(parse(data))
    return result["bytes_staged"], result["jobs_done"]


@pytest.mark.parametrize(("picker", "layout"), [("locality", "shared"), ("cursors", "contiguous")])
def test_a_picker_stages_each_file_about_once_where_in_order_sends_it_everywhere(picker, layout):
    in_order, done = staged("in-order", layout)
    chosen, chosen_done = staged(picker, layout)
    assert done == chosen_done == 48
    # every file once, and a boundary's files twice at most: one more boundary where the smaller cluster's
    # jobs were held for the bigger one (it ends them sooner), and it ran out of range first and split the other's
    assert chosen <= 8 * 1000 + 3 * 1000
    assert in_order > chosen
