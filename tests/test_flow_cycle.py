"""The flow strategies in the cycle: each cluster's reading, its allowance applied to the metascheduler's
budgets, the strategy's state kept per (strategy, cluster), and the sensors (a file server's load read
through the cluster's adapter; a sensor that fails closes that cluster only)."""

from __future__ import annotations

import os
from typing import ClassVar

import pytest

from cigri import campaigns as ops
from cigri import clusters, config, flow
from cigri.clock import RealClock
from cigri.cycle.flow import state_name
from cigri.errors import ConfigError
from cigri.flow import Allowance, CampaignFlow
from cigri.jdl import load
from cigri.model import EventCode, JobState

from .conftest import wait_for, write_jdl


class Recorder:
    """Answers a fixed allowance and remembers what it saw; counts its passes in its state."""

    name = "recorder"
    readings: ClassVar[list] = []
    answer = Allowance(0)

    def allow(self, reading, state):
        type(self).readings.append((reading, dict(state)))
        return type(self).answer, {"passes": state.get("passes", 0) + 1}


@pytest.fixture(autouse=True)
def recorder(monkeypatch):
    monkeypatch.setattr("cigri.flow._REGISTRY", dict(flow._REGISTRY))
    flow.register(Recorder)
    Recorder.readings = []
    Recorder.answer = Allowance(0)
    return Recorder


def submit(store, tmp_path, job_script, n, **fields):
    jdl = write_jdl(tmp_path, exec_file=str(job_script), params=[f"p{i} sleep:30" for i in range(n)], **fields)
    return ops.submit(store, load(jdl), RealClock())[0]


def launched(store, campaign_id):
    return sum(1 for job in store.jobs(campaign_id) if job.state != JobState.TO_LAUNCH)


def test_the_allowance_replaces_the_queue_depth_and_its_state_is_kept_per_strategy_and_cluster(
    store, cycle, tmp_path, job_script
):
    config.set_value(store, "flow", "recorder")
    cid = submit(store, tmp_path, job_script, 10)
    Recorder.answer = Allowance(3)
    cycle.run(["metasched"])
    assert launched(store, cid) == 2 + 3  # the 2 free slots, and 3 queued (the local queue_depth is 64)
    assert cycle.ctx.allowed == {"local": 2 + 3}  # nikita's threshold: the free slots and the allowed queue
    [(first, state)] = Recorder.readings
    assert state == {}
    assert (first.cluster, first.slots, first.free, first.depth, first.period) == ("local", 2, 2, 64, 0.0)
    assert (first.waiting, first.running, first.started, first.sensor) == (0, 0, 0, 0.0)
    assert first.reference is None  # none configured: the strategy's own
    assert first.campaigns == (CampaignFlow(cid, 0, 0, 0, 1),)  # a campaign that may send there, none there yet
    assert store.strategy_states()[state_name("recorder", "local")]["state"] == {"passes": 1}
    cycle.run(["runner"])
    cycle.run(["metasched"])
    second, state = Recorder.readings[1]
    assert state == {"passes": 1}
    assert second.period > 0
    assert [(c.campaign_id, c.sent) for c in second.campaigns] == [(cid, 5)]
    assert second.waiting + second.running == 5
    wait_for(lambda: (cycle.run(["updator", "metasched"]), any(r.started == 2 for r, _ in Recorder.readings))[1])


def test_submit_caps_the_budget_and_campaign_taps_cap_each_campaign(store, cycle, tmp_path, job_script):
    config.set_value(store, "flow", "recorder")
    first = submit(store, tmp_path, job_script, 10)
    second = submit(store, tmp_path, job_script, 10)
    Recorder.answer = Allowance(8, submit=4, campaigns={first: 1})
    cycle.run(["metasched"])
    assert (launched(store, first), launched(store, second)) == (1, 3)


def test_a_cluster_without_its_own_flow_keeps_the_queue_depth(store, cycle, tmp_path, job_script):
    cid = submit(store, tmp_path, job_script, 100)
    cycle.run(["metasched"])
    assert launched(store, cid) == 2 + 64
    assert cycle.ctx.allowed == {"local": 2 + 64}


def test_the_load_sensor_reads_this_machines_load_through_the_local_cluster(store, cycle, tmp_path, job_script):
    config.set_value(store, "flow", "recorder")
    config.set_value(store, "clusters.local.sensor", "load:localhost")
    config.set_value(store, "clusters.local.reference", 2)
    submit(store, tmp_path, job_script, 3)
    before = os.getloadavg()[0]
    cycle.run(["metasched"])
    after = os.getloadavg()[0]
    [(reading, _)] = Recorder.readings
    assert min(before, after) <= reading.sensor <= max(before, after)
    assert reading.reference == 2.0


def test_a_failing_sensor_closes_its_cluster_with_an_event_and_the_others_are_served(
    store, cycle, tmp_path, job_script
):
    clusters.add(store, "annex", "local", {"slots": 1, "idle_exit": 2}, RealClock())
    config.set_value(store, "clusters.local.sensor", "load:no-such-host.invalid")
    cid = submit(store, tmp_path, job_script, 4, clusters={"local": {}, "annex": {}})
    cycle.run(["metasched"])
    event = store.open_cluster_event("local")
    assert event.code == EventCode.CLUSTER_UNREACHABLE
    assert "local: cannot read the load of no-such-host.invalid" in event.message
    assert {job.cluster for job in store.jobs(cid) if job.state != JobState.TO_LAUNCH} == {"annex"}
    assert "local" not in cycle.ctx.allowed


def test_a_load_sensor_needs_an_adapter_with_a_transport(store):
    store.add_cluster("rest", "slurm-rest", {}, 0.0)
    with pytest.raises(ConfigError, match=r"clusters\.rest\.sensor: the slurm-rest adapter of rest has no transport"):
        config.set_value(store, "clusters.rest.sensor", "load:nfs")
    assert store.settings() == {}
