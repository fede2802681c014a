"""The feedback controllers' response to a step in local load, in the real simulator (the real cycle on a
simulated cluster): local users take half the cluster's 40 cores at 3000 s; cigri's grid jobs then start
half as fast and pile up in the queue until the controller sends less. The sensor is the cluster's
grid-waiting jobs (from its RM), the reference 10. Measured on the simulated queue, sampled before each
pass, smoothed over 5 passes (jobs start in bursts as others end): the overshoot above the reference, and
the passes until the smoothed queue is back within 3 jobs of the reference for good.

Both may let 40 slots wait (``queue``: not the reference, so that the controller's own dynamics show).
The waiting queue is an integrator (a job waiting stays waiting until it starts): pi's model is a = 1,
b = 1 (one slot sent is one more waiting), ip's alpha = 1 (the same, as the ultra-local model sees it).
Measured (seed 1): pi overshoots by 6.4 jobs and settles in 9 passes, ip by 3.6 in 7. With their defaults
(pi's a = 0.6, ip's alpha = 0.01, tuned for a file server's load) neither settles within the 60 passes.
"""

from __future__ import annotations

import pytest

from cigri.sim.run import Simulation
from cigri.sim.scenario import parse

STEP, PERIOD, REFERENCE = 3000.0, 30, 10
BAND = 3  # jobs around the reference
WINDOW = 60  # passes after the step judged


def response(flow: str, options: dict) -> list[float]:
    """The smoothed grid-waiting jobs at each pass from the step on."""
    data = {
        "name": "step",
        "period": PERIOD,
        "min_gap": PERIOD,  # one pass per period: the controllers count passes
        "seed": 1,
        "max_time": 30000,
        "clusters": [
            {
                "name": "a",
                "slots": 40,
                "best_effort": False,  # local users wait for grid jobs to end, then keep their cores
                "queue_depth": 40,
                "local_load": {"steps": [[STEP, 20]]},
            }
        ],
        "campaigns": [{"name": "c", "jobs": 1200, "duration": {"dist": "uniform", "min": 200, "max": 400}}],
        "config": {
            "clusters.a.reference": REFERENCE,
            **{f"flow.{flow}.{key}": value for key, value in options.items()},
        },
    }
    simulation = Simulation(parse(data), flow=flow)
    simulation.run()
    waiting, times = simulation.trace.waiting["a"], simulation.trace.times
    smoothed = [sum(waiting[max(0, i - 4) : i + 1]) / len(waiting[max(0, i - 4) : i + 1]) for i in range(len(waiting))]
    first = next(i for i, t in enumerate(times) if t >= STEP)
    return smoothed[first : first + WINDOW]


def settling(values: list[float]) -> int:
    """Passes until the values stay within BAND of the reference to the end."""
    outside = [i for i, v in enumerate(values) if abs(v - REFERENCE) > BAND]
    return outside[-1] + 1 if outside else 0


@pytest.mark.parametrize(
    ("flow", "options", "passes", "overshoot"),
    [("pi", {"a": 1, "b": 1, "queue": 40}, 15, 8), ("ip", {"alpha": 1, "queue": 40}, 12, 6)],
)
def test_a_step_in_local_load_settles_within_a_stated_number_of_passes_and_overshoot(flow, options, passes, overshoot):
    values = response(flow, options)
    assert len(values) == WINDOW
    assert max(values) - REFERENCE <= overshoot
    assert settling(values) <= passes


def test_without_feedback_the_same_step_floods_the_queue():
    """The same step under the constant allowance of 40: the queue stays far above the reference (what
    the controllers avoid)."""
    values = response("constant", {"depth": 40})
    assert min(values) > REFERENCE + BAND
