"""One cluster's trouble is that cluster's: any failure of its adapter (an error, an unexpected exception,
a call that never answers) closes it for the pass with an event, and the other clusters are served in the
same pass. Clusters are asked concurrently, and ``gridclusters add`` refuses what it can tell is unusable."""

from __future__ import annotations

import logging
import subprocess
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from cigri import adapters, clusters
from cigri import campaigns as ops
from cigri.adapters import AdapterContext, adapter_for
from cigri.adapters.local import LocalAdapter
from cigri.calls import Bounded
from cigri.clock import RealClock
from cigri.cycle import Cycle
from cigri.errors import AdapterError, ConfigError, SubmitError
from cigri.jdl import load
from cigri.model import Capacity, JobState, RemoteState, RemoteStatus
from cigri.store import Store

from .conftest import PYTHON, write_jdl


class FakeCluster:
    """An adapter that answers until :meth:`breaks`; then every call does what ``trouble`` does (raise, or
    block) instead. A call whose method has a barrier in ``gates`` waits there first."""

    best_effort = False
    queue_depth = 8
    max_batch = None

    def __init__(self, name: str, timeout: float = 0.2):
        self.name = name
        self.config = {"timeout": timeout}  # seconds: with cigri.calls.GRACE, the bound of each call
        self.calls: list[str] = []
        self.trouble: Callable[[], object] | None = None
        self.gates: dict[str, threading.Barrier] = {}
        self.submitted = 0

    def breaks(self, trouble: Callable[[], object]) -> None:
        self.trouble = trouble
        self.calls.clear()

    def _call(self, method: str) -> None:
        self.calls.append(method)
        if self.trouble is not None:
            self.trouble()
        if method in self.gates:
            self.gates[method].wait()

    def capacity(self) -> Capacity:
        self._call("capacity")
        return Capacity(total=4, used=0, grid_used=0, queued=0)

    def submit(self, batch_key, specs) -> list[str]:
        self._call("submit")
        ids = [f"{self.name}-{self.submitted + i}" for i in range(len(specs))]
        self.submitted += len(specs)
        return ids

    def find_batch(self, batch_key):
        self._call("find_batch")
        return None

    def states(self, remote_ids) -> dict[str, RemoteStatus]:
        self._call("states")
        return {remote: RemoteStatus(remote, RemoteState.RUNNING, started_at=1.0) for remote in remote_ids}

    def cancel(self, remote_ids) -> None:
        self._call("cancel")

    def tail(self, remote_id, stream, lines) -> str:
        self._call("tail")
        return ""

    def check(self, settings, path) -> None:
        pass

    def activity(self) -> object:
        self._call("activity")
        return None

    def close(self) -> None:
        pass


@pytest.fixture
def released():
    """What a hung call waits for: set at teardown, so that no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def with_fakes(store: Store, *fakes: FakeCluster) -> Cycle:
    """A cycle where each fake serves its cluster (recorded as a local one) and ``local`` is the real one."""
    clock = RealClock()
    for fake in fakes:
        clusters.add(store, fake.name, "local", {}, clock)
    by_name = {fake.name: fake for fake in fakes}

    def factory(name: str):
        return by_name.get(name) or adapter_for(store.cluster(name), AdapterContext(store.directory, clock))

    return Cycle(store, clock, adapters=factory)


def submit(store: Store, tmp_path: Path, script: Path, names: list[str], params: list[str]) -> int:
    jdl = write_jdl(tmp_path, exec_file=str(script), params=params, clusters={name: {} for name in names})
    return ops.submit(store, load(jdl), RealClock())[0]


def where(store: Store, campaign_id: int) -> dict[str, set]:
    """Each job's (cluster, state), by cluster."""
    out: dict[str, set] = {}
    for job in store.jobs(campaign_id):
        out.setdefault(job.cluster, set()).add(job.state)
    return out


def one_pass_with_a_broken_cluster(store, tmp_path, job_script, trouble) -> tuple[FakeCluster, int]:
    """``far`` runs a campaign, then breaks; the next pass must still place a new campaign on ``local``."""
    far = FakeCluster("far")
    cycle = with_fakes(store, far)
    try:
        first = submit(store, tmp_path, job_script, ["far"], ["a1", "a2"])
        cycle.run()
        assert where(store, first) == {"far": {JobState.SUBMITTED}}  # far answered: the next pass asks their states
        far.breaks(trouble)
        second = submit(store, tmp_path, job_script, ["local", "far"], ["b1", "b2"])
        cycle.run()
    finally:
        cycle.close()
    assert set(where(store, second)) == {"local"}  # submitted in that same pass, all to local
    assert JobState.LAUNCHING not in where(store, second)["local"]
    assert far.calls == [far.calls[0]]  # closed for the pass at its first failure: asked nothing more
    return far, second


def raising(exc: Exception) -> Callable[[], object]:
    def trouble():
        raise exc

    return trouble


@pytest.mark.parametrize(
    "exc, message",
    [
        (AdapterError("far: slurmctld does not answer"), "far: slurmctld does not answer"),
        # the case: a configuration the adapter only finds wrong when it uses it
        (ConfigError("cluster 'far' (slurm-rest) needs the home option"), "needs the home option"),
    ],
)
def test_an_adapter_error_closes_that_cluster_with_an_event_in_the_first_pass(
    store, tmp_path, job_script, exc, message
):
    one_pass_with_a_broken_cluster(store, tmp_path, job_script, raising(exc))
    event = store.open_cluster_event("far")
    assert event is not None and message in event.message
    assert store.open_cluster_event("local") is None


def test_an_unexpected_exception_is_that_clusters_failure_with_its_traceback_logged(
    store, tmp_path, job_script, caplog
):
    with caplog.at_level(logging.ERROR, logger="cigri.calls"):
        one_pass_with_a_broken_cluster(store, tmp_path, job_script, raising(KeyError("nodes")))
    event = store.open_cluster_event("far")
    assert event is not None and "unexpected KeyError" in event.message and "nodes" in event.message
    logged = [record for record in caplog.records if record.exc_info]
    assert logged and isinstance(logged[0].exc_info[1], KeyError)


def test_a_call_that_does_not_answer_is_abandoned_at_the_clusters_timeout(store, tmp_path, job_script, released):
    # bounded only so that a cycle without the timeout fails this test instead of hanging it
    far, _ = one_pass_with_a_broken_cluster(store, tmp_path, job_script, lambda: released.wait(20))
    event = store.open_cluster_event("far")
    assert event is not None and "no answer within 1.2 s" in event.message
    assert len(far.calls) == 1  # the hung call, still waiting: nothing else was sent to far


def concurrently(method: str, *fakes: FakeCluster) -> None:
    """Each ``method`` call returns only once every fake was asked too: asked one after the other, the first
    would wait at the barrier until it breaks, and its cluster would be closed for the pass."""
    barrier = threading.Barrier(len(fakes), timeout=10)  # broken, not hung, when the calls come one by one
    for fake in fakes:
        fake.gates[method] = barrier


def test_the_metascheduler_asks_the_clusters_capacities_concurrently(store, tmp_path, job_script):
    near, far = FakeCluster("near", timeout=30), FakeCluster("far", timeout=30)
    concurrently("capacity", near, far)
    cycle = with_fakes(store, near, far)
    try:
        campaign = submit(store, tmp_path, job_script, ["near", "far"], [f"j{i}" for i in range(8)])
        cycle.run(["metasched", "runner"])
    finally:
        cycle.close()
    assert set(where(store, campaign)) == {"near", "far"}
    assert store.open_cluster_event("near") is None and store.open_cluster_event("far") is None


def test_the_updator_asks_the_clusters_job_states_concurrently(store, tmp_path, job_script):
    near, far = FakeCluster("near", timeout=30), FakeCluster("far", timeout=30)
    cycle = with_fakes(store, near, far)
    try:
        campaign = submit(store, tmp_path, job_script, ["near", "far"], [f"j{i}" for i in range(8)])
        cycle.run(["metasched", "runner"])
        assert set(where(store, campaign)) == {"near", "far"}
        concurrently("states", near, far)
        cycle.run(["updator"])
    finally:
        cycle.close()
    assert where(store, campaign) == {"near": {JobState.RUNNING}, "far": {JobState.RUNNING}}
    assert store.open_cluster_event("near") is None and store.open_cluster_event("far") is None


def test_a_slurm_rest_cluster_without_a_way_to_its_home_is_refused(cli, state):
    token = state.parent / "token"
    base = ["gridclusters", "add", "rest", "--adapter", "slurm-rest", "--url", "http://127.0.0.1:6820"]
    base += ["--user", "someone", "--token-file", str(token)]
    out = cli(*base, code=4)
    assert "needs the home option, or host for ssh" in out and len(out.strip().splitlines()) == 1
    store = Store(state)
    try:
        assert not store.has_cluster("rest")
    finally:
        store.close()
    cli(*base, "--home", "/home/someone")
    out = cli("gridclusters", "set", "rest", "--home", "", code=4)
    assert "needs the home option" in out


def test_gridclusters_lists_every_cluster_when_one_adapter_fails(cli, monkeypatch):
    cli("gridclusters", "add", "far", "--adapter", "local")

    class FailingFar(LocalAdapter):
        def capacity(self) -> Capacity:
            if self.name == "far":
                raise KeyError("nodes")
            return super().capacity()

    monkeypatch.setattr(adapters, "registry", lambda: {"local": FailingFar})
    rows = {row["name"]: row for row in cli.json("gridclusters")}
    assert rows["local"]["reachable"] and rows["local"]["slots"] == 2
    assert not rows["far"]["reachable"] and "unexpected KeyError" in rows["far"]["problem"]


def test_an_abandoned_call_does_not_keep_the_process_alive():
    """A cron pass must end: the thread of a call that never answers is not waited for at exit."""
    script = textwrap.dedent(
        """
        import threading
        from cigri.calls import Bounded
        from cigri.errors import TransportError

        class Hung:
            config = {"timeout": 0.1}
            def capacity(self):
                threading.Event().wait()  # for ever

        try:
            Bounded("far", lambda name: Hung()).capacity()
        except TransportError as exc:
            print(exc)
        """
    )
    # the timeout only turns a hung child into a failure instead of a hung test run
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "far: no answer within 1.1 s (capacity)"


def test_an_adapter_that_answers_at_once_is_called_on_the_callers_thread_and_confined_all_the_same():
    """No thread for such a call; a refused submission is an answer, any other failure closes the cluster
    for the pass (later calls fail at once with the same cause) until it is reopened."""

    class AtOnce:
        answers_at_once = True

        def __init__(self):
            self.threads: list[threading.Thread] = []

        def capacity(self):
            self.threads.append(threading.current_thread())
            return Capacity(total=4, used=0, grid_used=0, queued=0)

        def submit(self, key, specs):
            raise SubmitError("refused")

        def states(self, remote_ids):
            raise KeyError("state")

    rm = AtOnce()
    bounded = Bounded("near", lambda name: rm)
    assert bounded.capacity().total == 4 and rm.threads == [threading.current_thread()]
    with pytest.raises(SubmitError):
        bounded.submit("key", [])
    assert bounded.failure is None
    pending = bounded.start("states", ["1"])
    with pytest.raises(AdapterError, match="unexpected KeyError") as first:
        pending.result()
    with pytest.raises(AdapterError) as again:
        pending.result()
    assert again.value is first.value is bounded.failure
    with pytest.raises(AdapterError) as closed:
        bounded.capacity()
    assert closed.value is first.value and rm.threads == [threading.current_thread()]
    bounded.reopen()
    assert bounded.capacity().total == 4
