"""What every flow strategy promises, on any reading: a queue within the cluster's depth, nothing sent while
its queued jobs do not start or while the sensor a controller needs is unread, a JSON-able state."""

import json

from hypothesis import given
from hypothesis import strategies as st

from cigri.flow import CampaignFlow, Reading, flow, registry

counts = st.integers(min_value=0, max_value=500)
campaigns = st.lists(
    st.builds(CampaignFlow, st.integers(min_value=1, max_value=5), counts, counts, counts, st.integers(1, 8)),
    max_size=4,
    unique_by=lambda c: c.campaign_id,
).map(tuple)
readings = st.builds(
    Reading,
    cluster=st.just("c"),
    now=st.floats(min_value=0, max_value=1e6),
    period=st.floats(min_value=0, max_value=600),
    slots=counts,
    free=counts,
    waiting=counts,
    running=counts,
    started=counts,
    expected_ends=st.floats(min_value=0, max_value=500),
    depth=st.integers(min_value=0, max_value=50),
    sensor=st.none() | st.floats(min_value=0, max_value=1000),
    reference=st.none() | st.floats(min_value=0, max_value=100),
    stalled=st.booleans(),
    campaigns=campaigns,
)


@given(st.lists(readings, min_size=1, max_size=6))
def test_every_strategy_keeps_its_promises(passes):
    for name in sorted(registry()):
        strategy = flow(name)
        state: dict = {}
        for reading in passes:
            allowance, state = strategy.allow(reading, state)
            assert allowance.queue >= 0, name
            if reading.depth > 0:
                assert allowance.queue <= reading.depth, name
            if reading.stalled:
                assert allowance.queue == 0, name
                assert allowance.submit in (None, 0), name
                assert all(cap == 0 for cap in allowance.campaigns.values()), name
            if allowance.submit is not None:
                assert allowance.submit >= 0, name
            if name in ("pi", "ip") and reading.sensor is None:
                assert allowance.submit == 0, name
            assert all(cap >= 0 for cap in allowance.campaigns.values()), name
            assert json.loads(json.dumps(state)) == state, name
