"""The flow contract: the registry, building a strategy from its options, the constant allowance."""

import pytest

from cigri.errors import ConfigError
from cigri.flow import Allowance, flow, registry

from .flowplant import reading as flow_reading


def reading(**given):
    return flow_reading(**{"slots": 10, "running": 10, "expected_ends": 1.0, "depth": 7, "reference": None, **given})


def test_constant_lets_the_cluster_queue_depth_wait_unless_queued_jobs_do_not_start():
    strategy = flow("constant")
    assert strategy.allow(reading(), {})[0] == Allowance(7)
    assert strategy.allow(reading(stalled=True), {})[0] == Allowance(0)
    assert flow("constant", {"depth": 3}).allow(reading(), {})[0] == Allowance(3)


def test_unknown_strategy_and_bad_options_name_themselves():
    with pytest.raises(ConfigError, match="unknown flow strategy 'nope'"):
        flow("nope")
    with pytest.raises(ConfigError, match=r"^flow\.constant\.depth: "):
        flow("constant", {"depth": -1})
    with pytest.raises(ConfigError, match=r"^flow\.constant\.gain: "):
        flow("constant", {"gain": 1})
    assert "constant" in registry()
