"""The slurm-rest adapter: error mapping and parsing against httpx.MockTransport, then the real slurmrestd
of scripts/slurm-local.sh as the unprivileged user cigritest (outputs read back through ssh)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from cigri.adapters import AdapterContext, adapter_class
from cigri.adapters.slurm_rest import SlurmRest, args_printer, read_token, task_indices
from cigri.clock import RealClock
from cigri.errors import AdapterError, ConfigError, SubmitError, TransportError
from cigri.model import Capacity, Cluster, JobSpec, RemoteState

from .conftest import wait_for, write_jdl
from .slurm import job_script, rest_cluster_options, runs
from .test_slurm_parsers import FakeClock, array_answer

TOKEN = "eyJ.secret-token.XYZ"  # must never show in a message
NASTY = ["a b; echo hacked", "$(touch {pwned})", "`id`", "it's", '"quoted" \\ *', "-n"]


def spec(i: int, *argv: str, walltime: int = 60, resources: str = "core=1") -> JobSpec:
    return JobSpec(
        job_id=i,
        campaign_id=7,
        name=f"j{i}",
        argv=argv,
        directory="~",
        walltime=walltime,
        resources=resources,
        user="alice",
    )


def all_in(states: dict, ids, *wanted: RemoteState) -> bool:
    """Every one of ``ids`` has a state, one of ``wanted`` (an empty answer is not "all")."""
    return set(states) == set(ids) and all(s.state in wanted for s in states.values())


def finished(adapter, ids):
    states = adapter.states(ids)
    return states if all_in(states, ids, RemoteState.EXITED, RemoteState.KILLED) else None


# ---- without Slurm: httpx.MockTransport -----------------------------------------------------------


def ok(**fields) -> httpx.Response:
    return httpx.Response(200, json={"meta": {}, "errors": [], **fields})


def failed(status: int, *errors: dict, **fields) -> httpx.Response:
    return httpx.Response(status, json={"meta": {}, "errors": list(errors), **fields})


def mocked(tmp_path: Path, handler, clock=None, token=TOKEN, **config) -> SlurmRest:
    """An adapter whose slurmrestd is ``handler``; v0.0.38 answers pings unless the handler says otherwise.
    Adapters made on the same ``tmp_path`` share a state directory: each is the next process."""
    token_file = tmp_path / "token"
    token_file.write_text(f"SLURM_JWT={token}\n")

    def serve(request: httpx.Request) -> httpx.Response:
        assert request.headers["X-SLURM-USER-TOKEN"] == token and request.headers["X-SLURM-USER-NAME"] == "alice"
        answer = handler(request)
        if answer is None and request.url.path.endswith("/ping"):
            return ok(pings=[{"ping": "UP"}]) if "v0.0.38" in request.url.path else httpx.Response(404, text="no")
        return answer

    settings = {
        "url": "https://rest.example:6820",
        "user": "alice",
        "token_file": str(token_file),
        "home": "/home/alice",
    }
    cluster = Cluster("rest", "slurm-rest", {**settings, **config})
    context = AdapterContext(tmp_path, clock or RealClock())
    return SlurmRest(cluster, context, transport=httpx.MockTransport(serve))


def refusal(adapter: SlurmRest, call, error: type[Exception]) -> str:
    with pytest.raises(error) as caught:
        call(adapter)
    adapter.close()
    message = str(caught.value)
    assert TOKEN not in message and "Traceback" not in message
    return message


def test_http_401_is_an_authentication_failure(tmp_path):
    adapter = mocked(tmp_path, lambda request: httpx.Response(401, text="Authentication failure"))
    message = refusal(adapter, SlurmRest.capacity, TransportError)
    assert message.startswith("rest:") and "authentication refused (HTTP 401)" in message


FIXTURES = Path(__file__).parent / "fixtures" / "slurm"


def jwt(**claims) -> str:
    """A token as `scontrol token` makes them (the signature does not matter to the adapter)."""
    header, payload = (
        base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")
        for part in ({"alg": "HS256", "typ": "JWT"}, claims)
    )
    return f"{header}.{payload}.c2lnbmF0dXJl"


def recorded(name: str) -> httpx.Response:
    """slurmrestd 22.05's answer, recorded: ``badtoken-*`` to a token slurmctld refused, ``down-*`` with
    slurmctld unreachable (a second slurmrestd given a SlurmctldPort nothing listens on): the same bodies."""
    return httpx.Response(500, json=json.loads((FIXTURES / f"rest-500.{name}.json").read_text()))


@pytest.mark.parametrize("path", ["ping", "jobs", "nodes"])
def test_slurmrestd_answers_the_same_500_for_a_refused_token_and_an_absent_slurmctld(path):
    assert recorded(f"badtoken-{path}").json()["errors"] == recorded(f"down-{path}").json()["errors"]


@pytest.mark.parametrize("path", ["ping", "nodes"])
def test_http_500_with_a_live_token_says_slurmctld_does_not_answer(tmp_path, path):
    live = jwt(exp=1_700_000_600, sun="alice")  # valid 10 more minutes
    adapter = mocked(tmp_path, lambda request: recorded(f"down-{path}"), clock=FakeClock(1_700_000_000), token=live)
    message = refusal(adapter, SlurmRest.capacity, TransportError)
    assert message.startswith("rest: slurmrestd got no answer from slurmctld (HTTP 500: Unspecified error")
    assert "slurmctld is down or unreachable" in message and "authentication" not in message


def test_http_500_with_an_expired_token_says_it_expired(tmp_path):
    expired = jwt(exp=1_699_999_940, sun="alice")
    adapter = mocked(tmp_path, lambda request: recorded("badtoken-ping"), clock=FakeClock(1_700_000_000), token=expired)
    message = refusal(adapter, SlurmRest.capacity, TransportError)
    assert "authentication refused (HTTP 500: Unspecified error (slurmctld config is unable to load))" in message
    assert "the token in token_file expired at 2023-11-14 22:12 UTC: renew it" in message


def test_http_500_with_something_that_is_no_jwt_says_so(tmp_path):
    adapter = mocked(tmp_path, lambda request: recorded("badtoken-jobs"))
    message = refusal(adapter, SlurmRest.capacity, TransportError)
    assert "authentication refused (HTTP 500: Unspecified error" in message and "token_file holds no JWT" in message


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "cannot reach slurmrestd at https://rest.example:6820"),
        (httpx.ConnectError("[Errno -2] Name or service not known"), "Name or service not known"),
        (httpx.ReadTimeout("timed out"), "no answer within 5 s"),
    ],
)
def test_unreachable_slurmrestd_is_a_transport_error(tmp_path, exc, words):
    def handler(request):
        raise exc

    message = refusal(mocked(tmp_path, handler, timeout=5), SlurmRest.capacity, TransportError)
    assert message.startswith("rest:") and words in message


def live_adapter(tmp_path: Path, url: str, **config) -> SlurmRest:
    token = tmp_path / "token"
    token.write_text(jwt(sun="alice"))
    settings = {"url": url, "user": "alice", "token_file": str(token), "home": "/home/alice", **config}
    return SlurmRest(Cluster("rest", "slurm-rest", settings), AdapterContext(tmp_path, RealClock()))


def test_a_port_where_nothing_listens_is_a_transport_error_at_once(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free once closed
    message = refusal(live_adapter(tmp_path, f"http://127.0.0.1:{port}"), SlurmRest.capacity, TransportError)
    assert message == f"rest: cannot reach slurmrestd at http://127.0.0.1:{port}: [Errno 111] Connection refused"


def test_a_server_that_accepts_and_never_answers_is_a_transport_error_within_the_timeout(tmp_path):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # the kernel accepts connections; nobody ever reads or answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        message = refusal(live_adapter(tmp_path, url, timeout=1), SlurmRest.capacity, TransportError)
    assert message == f"rest: slurmrestd at {url} gave no answer within 1 s"


def test_other_server_errors_are_transport_errors(tmp_path):
    broken = {"error_number": 1, "error": "Unexpected error"}
    adapter = mocked(tmp_path, lambda request: None if "ping" in request.url.path else failed(503, broken))
    assert "HTTP 503 to GET /slurm/v0.0.38/nodes: Unexpected error" in refusal(
        adapter, SlurmRest.capacity, TransportError
    )


def test_a_refused_submission_is_a_submit_error(tmp_path):
    sent = []

    def handler(request):
        if request.url.path == "/slurm/v0.0.38/job/submit":
            sent.append(json.loads(request.content))
            return failed(500, {"error_code": 2000, "error": "Invalid partition name specified"})
        return None

    adapter = mocked(tmp_path, handler, partition="nope")
    message = refusal(adapter, lambda a: a.submit("cigri.x.1.b.1", [spec(1, "true")]), SubmitError)
    assert message == "rest refused the batch: Invalid partition name specified"
    job = sent[0]["job"]
    assert job["partition"] == "nope" and job["environment"]["PATH"] and job["array"] == "1-1"


def test_submission_fields_follow_the_sbatch_mapping(tmp_path):
    sent = []

    def handler(request):
        if request.url.path.endswith("/job/submit"):
            sent.append(json.loads(request.content))
            return ok(job_id=42, step_id="BATCH")
        return None

    adapter = mocked(tmp_path, handler, besteffort_partition="be", output_dir="~/out")
    spec_one = JobSpec(
        1, 7, "j1", ("true",), "{HOME}/run", 61, resources="nodes=2/core=4", project="p", best_effort=True
    )
    spec_two = JobSpec(
        2, 7, "j2", ("true",), "{HOME}/run", 61, resources="nodes=2/core=4", project="p", best_effort=True
    )
    assert adapter.submit("cigri.x.1.b.2", [spec_one, spec_two]) == ["42_1", "42_2"]
    adapter.close()
    job = sent[0]["job"]
    assert {k: job[k] for k in ("name", "array", "nodes", "tasks_per_node", "time_limit", "account", "partition")} == {
        "name": "cigri.x.1.b.2",
        "array": "1-2",
        "nodes": 2,
        "tasks_per_node": 4,
        "time_limit": 2,
        "account": "p",
        "partition": "be",
    }
    assert job["current_working_directory"] == "/home/alice/run"
    assert job["standard_error"] == "/home/alice/out/cigri-%A_%a.err"


def test_the_newest_version_that_answers_is_used_remembered_and_api_forces_one(tmp_path):
    seen = []
    offered = {"v0.0.38"}

    def handler(request):
        seen.append(request.url.path)
        version = request.url.path.split("/")[2]
        if version not in offered:
            return httpx.Response(404, text="Not Found")
        if request.url.path.endswith("/ping"):
            return ok(pings=[{"ping": "UP"}])
        return ok(jobs=[]) if request.url.path.endswith("/jobs") else array_answer({"jobs": []}, "1")

    adapter = mocked(tmp_path, handler)
    assert adapter.find_batch("cigri.none") is None
    assert seen == ["/slurm/v0.0.39/ping", "/slurm/v0.0.38/ping", "/slurm/v0.0.38/jobs"]
    adapter.close()
    seen.clear()
    again = mocked(tmp_path, handler)  # the next process: the version is remembered, no probe
    assert again.states(["1_1"])["1_1"].state == RemoteState.UNKNOWN and seen == ["/slurm/v0.0.38/job/1"]
    again.close()
    seen.clear()
    offered = {"v0.0.37"}  # slurmrestd upgraded meanwhile: probed again, and the request sent again
    upgraded = mocked(tmp_path, handler)
    assert upgraded.states(["1_1"])["1_1"].state == RemoteState.UNKNOWN
    assert seen == [
        "/slurm/v0.0.38/job/1",
        "/slurm/v0.0.39/ping",
        "/slurm/v0.0.38/ping",
        "/slurm/v0.0.37/ping",
        "/slurm/v0.0.37/job/1",
    ]
    upgraded.close()
    seen.clear()
    forced = mocked(tmp_path, handler, api="v0.0.37")
    assert forced.states(["1_1"])["1_1"].state == RemoteState.UNKNOWN and seen == ["/slurm/v0.0.37/job/1"]
    forced.close()
    assert "v0.0.40" in refusal(mocked(tmp_path, handler, api="v0.0.40"), SlurmRest.capacity, ConfigError)


def test_states_read_tasks_and_pending_array_records(tmp_path):
    def job(job_id, array, index, state, exit_code=0, name="cigri.x.1.b.3", user="alice", rest=""):
        return {
            "job_id": job_id,
            "array_job_id": array,
            "array_task_id": index,
            "array_task_string": rest,
            "job_state": state,
            "exit_code": exit_code,
            "start_time": 1000,
            "end_time": 1060,
            "cpus": 2,
            "name": name,
            "user_name": user,
            "state_reason": "None",
            "comment": "cigri batch of 5 tasks",
        }

    listing = [
        job(11, 10, 1, "COMPLETED"),
        job(12, 10, 2, "FAILED", 1792),
        job(13, 10, 3, "RUNNING"),
        job(10, 10, None, "PENDING", rest="4-5"),
        job(21, 20, 1, "RUNNING", name="cigri.other", user="bob"),
        job(31, 30, 1, "CANCELLED", name="not-cigri"),
    ]
    nodes = [
        {"cpus": 8, "alloc_cpus": 3, "state": "mixed", "state_flags": [], "partitions": ["debug"]},
        {"cpus": 4, "alloc_cpus": 0, "state": "idle", "state_flags": ["DRAIN"], "partitions": ["debug"]},
        {"cpus": 4, "alloc_cpus": 1, "state": "allocated", "state_flags": [], "partitions": ["other"]},
    ]

    asked = []

    def handler(request):
        path = request.url.path
        asked.append(path)
        if "/job/" in path:
            return array_answer({"jobs": listing}, path.rsplit("/", 1)[1])
        return ok(jobs=listing) if path.endswith("/jobs") else ok(nodes=nodes) if path.endswith("/nodes") else None

    adapter = mocked(tmp_path, handler, partition="debug")
    ids = [f"10_{i}" for i in range(1, 7)] + ["20_1", "30_1"]
    states = adapter.states(ids)
    assert [path for path in asked if "ping" not in path] == [f"/slurm/v0.0.38/job/{a}" for a in (10, 20, 30)]
    assert [(states[i].state.value, states[i].exit_code) for i in ids] == [
        ("exited", 0),
        ("exited", 7),
        ("running", None),
        ("pending", None),
        ("pending", None),
        ("unknown", None),
        ("unknown", None),  # another user's
        ("unknown", None),  # not a cigri job
    ]
    assert (states["10_1"].started_at, states["10_1"].ended_at) == (1000, 1060)
    assert (states["10_3"].started_at, states["10_3"].ended_at) == (1000, None)
    assert adapter.find_batch("cigri.x.1.b.3") == [f"10_{i}" for i in range(1, 6)]
    assert adapter.capacity() == Capacity(total=8, used=3, grid_used=2, queued=2, down=4)
    assert not any(path.endswith("/jobs") for path in asked)  # what states() read told the rest
    adapter.close()


def test_cancel_ignores_gone_jobs_and_deletes_whole_arrays(tmp_path):
    listing = [
        {"array_job_id": 10, "array_task_id": 1, "job_state": "RUNNING", "name": "cigri.k", "user_name": "alice"},
        {"array_job_id": 10, "array_task_id": 2, "job_state": "COMPLETED", "name": "cigri.k", "user_name": "alice"},
        {"array_job_id": 20, "array_task_id": None, "array_task_string": "1-3", "job_state": "PENDING"}
        | {"name": "cigri.l", "user_name": "alice"},
    ]
    deleted = []

    def handler(request):
        if request.method == "GET" and "/job/" in request.url.path:
            return array_answer({"jobs": listing}, request.url.path.rsplit("/", 1)[1])
        if request.method == "DELETE":
            deleted.append(request.url.path.rsplit("/", 1)[1])
            return failed(500, {"error_number": 2017, "error": "Invalid job id specified"})
        return None

    adapter = mocked(tmp_path, handler)
    adapter.cancel(["10_1", "10_2", "20_1", "20_3", "99_1"])
    adapter.close()
    assert deleted == ["10", "20_1", "20_3"]


def test_a_kill_refused_inside_an_http_200_answer_is_an_error(tmp_path):
    """slurmrestd 22.05 may say a request failed in the errors of an HTTP 200 answer (it does for holds):
    a cancel whose kill Slurm refused is the cluster's error, not a silent success the job outlives.
    Errors without a number, or saying the task is gone or done, are no refusal."""
    listing = [
        {"array_job_id": 7, "array_task_id": i, "job_state": "RUNNING", "name": "cigri.k", "user_name": "alice"}
        for i in (1, 2, 3)
    ]
    answers = {
        "7_1": ok(errors=[{"description": "kill job failed"}]),
        "7_2": ok(errors=[{"error_number": 2021, "error": "Job/step already completing or completed"}]),
        "7_3": ok(errors=[{"error_number": 2020, "error": "Job is in transitional state"}]),
    }

    def handler(request):
        if request.method == "GET" and "/job/" in request.url.path:
            return array_answer({"jobs": listing}, request.url.path.rsplit("/", 1)[1])
        return answers[request.url.path.rsplit("/", 1)[1]] if request.method == "DELETE" else None

    mocked(tmp_path, handler).cancel(["7_1", "7_2"])
    message = refusal(mocked(tmp_path, handler), lambda a: a.cancel(["7_3"]), AdapterError)
    assert "refused to cancel 7_3: Job is in transitional state" in message


def test_hold_and_release_update_each_task_and_ignore_tasks_gone(tmp_path):
    """slurmrestd 22.05's answers to ``{"hold": ...}`` (as the real one gives them: HTTP 200, and an error
    without a number even when the update worked)."""
    updates = []
    answers = {
        "5_1": ok(errors=[{"description": "job array update from [localhost]:1 failed"}]),
        "5_2": ok(errors=[{"description": "job array update failed", "error_number": 2084}]),
        "6_1": ok(errors=[{"description": "job update failed", "error_number": 2002, "error": "Access denied"}]),
    }

    def handler(request):
        if request.method == "POST":
            updates.append((request.url.path.rsplit("/", 1)[1], json.loads(request.content)))
            return answers[updates[-1][0]]
        return None

    adapter = mocked(tmp_path, handler)
    adapter.hold(["5_1", "5_2"])
    adapter.release(["5_1"])
    assert updates == [("5_1", {"hold": True}), ("5_2", {"hold": True}), ("5_1", {"hold": False})]
    assert "refused to hold 6_1: Access denied" in refusal(adapter, lambda a: a.hold(["6_1"]), AdapterError)


def test_token_files_and_tails_without_ssh(tmp_path):
    env = tmp_path / "ci.env"
    env.write_text(f"SLURM_JWT_USER=other\nexport SLURM_JWT={TOKEN}\nSSH_PORT=2222\n")
    bare = tmp_path / "bare"
    bare.write_text(f"{TOKEN}\n")
    assert read_token(str(env)) == read_token(str(bare)) == TOKEN
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="holds no token"):
        read_token(str(empty))
    with pytest.raises(ConfigError, match="cannot read token_file"):
        read_token(str(tmp_path / "missing"))
    adapter = mocked(tmp_path, lambda request: None)
    assert "unavailable" in adapter.tail("1_1", "stderr", 5)
    assert adapter_class("slurm-rest") is SlurmRest
    assert task_indices("1,3,5-9:2%4") == [1, 3, 5, 7, 9]


def test_the_job_script_runs_the_args_line_of_its_task_literally(tmp_path):
    from cigri.adapters.slurm import job_script

    words = [w.format(pwned=tmp_path / "pwned") for w in NASTY]
    specs = [spec(1, "/bin/false"), spec(2, "/bin/sh", "-c", 'printf "%s|" "$CIGRI_JOB_NAME" "$@"', "sh", *words)]
    script = tmp_path / "job.sh"
    script.write_text(job_script(specs[1], "/home/alice", args_printer(specs, "/home/alice"), f"{tmp_path}/"))
    env = {"PATH": os.environ["PATH"], "SLURM_ARRAY_TASK_ID": "2", "SLURM_JOB_ID": "5", "TMPDIR": str(tmp_path)}
    done = subprocess.run(["/bin/sh", str(script)], env=env, capture_output=True, text=True, check=True)
    assert done.stdout == "|".join(["j2", *words]) + "|"
    assert not (tmp_path / "pwned").exists()


class Cluster22:
    """A slurmrestd 22.05 holding ``jobs`` (records as GET /jobs lists them): arrays by id as slurmctld
    gives them, submissions as new pending arrays; ``asked`` lists every request but the pings (the path
    after the version, with the method when not GET)."""

    def __init__(self, jobs: list[dict]):
        self.jobs, self.asked, self.next_id = jobs, [], 30

    def __call__(self, request: httpx.Request):
        path = request.url.path
        if path.endswith("/ping"):
            return None
        leaf = path.removeprefix("/slurm/v0.0.38/")
        self.asked.append(leaf if request.method == "GET" else f"{request.method} {leaf}")
        if path.endswith("/job/submit"):
            job = json.loads(request.content)["job"]
            self.jobs.append(record(self.next_id, None, "PENDING", job["name"], rest=job["array"]))
            self.next_id += 10
            return ok(job_id=self.next_id - 10)
        if "/job/" in path:
            return array_answer({"jobs": self.jobs}, path.rsplit("/", 1)[1])
        if path.endswith("/nodes"):
            return ok(nodes=[{"cpus": 8, "alloc_cpus": 1, "state": "mixed", "state_flags": []}])
        return ok(jobs=self.jobs)

    def set_state(self, array: int, index: int, state: str) -> None:
        """A task of a pending array record leaves it (split) in ``state``, or a split task changes state."""
        for job in self.jobs:
            if job["array_job_id"] == array and job["array_task_id"] == index:
                job["job_state"] = state
                return
        pending = next(j for j in self.jobs if j["array_job_id"] == array and j["array_task_id"] is None)
        left = [i for i in task_indices(pending["array_task_string"]) if i != index]
        pending["array_task_string"] = ",".join(map(str, left))
        self.jobs.append(record(array * 100 + index, index, state, pending["name"], array=array))


def record(job_id, index, state, name, user="alice", rest="", array=None):
    return {
        "job_id": job_id,
        "array_job_id": array or job_id,
        "array_task_id": index,
        "array_task_string": rest,
        "job_state": state,
        "exit_code": 0,
        "cpus": 1,
        "name": name,
        "user_name": user,
        "state_reason": "None",
        "comment": "",
    }


def test_the_memory_spares_the_full_listing_to_the_next_processes(tmp_path):
    others = [record(100 + i, None, "COMPLETED", f"job{i}", user="bob") for i in range(50)]
    slurm = Cluster22([*others, record(10, None, "PENDING", "cigri.x.1.b.1", rest="1-2")])
    clock = FakeClock()
    first = mocked(tmp_path, slurm, clock)
    assert first.capacity().queued == 2  # no memory yet: the full listing, once
    assert slurm.asked == ["nodes", "jobs"]
    assert first.submit("cigri.x.1.b.2", [spec(i, "true") for i in (1, 2, 3)]) == ["30_1", "30_2", "30_3"]
    first.close()
    slurm.asked.clear()
    second = mocked(tmp_path, slurm, clock)  # the next almighty: what the memory holds live, array by array
    assert second.capacity() == Capacity(total=8, used=1, grid_used=0, queued=5)
    assert slurm.asked == ["nodes", "job/10", "job/30"]
    assert second.find_batch("cigri.x.1.b.2") == ["30_1", "30_2", "30_3"] and len(slurm.asked) == 3
    slurm.set_state(10, 1, "COMPLETED")
    slurm.set_state(10, 2, "FAILED")
    slurm.set_state(30, 1, "RUNNING")
    clock.sleep(1)
    assert second.capacity() == Capacity(total=8, used=1, grid_used=1, queued=2)
    second.close()
    slurm.asked.clear()
    third = mocked(tmp_path, slurm, clock)  # array 10 is over: no longer read
    assert third.capacity().queued == 2 and slurm.asked == ["nodes", "job/30"]
    assert third.find_batch("cigri.x.1.b.1") == ["10_1", "10_2"] and slurm.asked == ["nodes", "job/30"]
    third.close()


def test_a_task_its_array_no_longer_shows_is_unknown_never_done(tmp_path):
    slurm = Cluster22([record(10, 1, "RUNNING", "cigri.x.1.b.1", array=10)])
    clock = FakeClock()
    adapter = mocked(tmp_path, slurm, clock)
    ids = adapter.submit("cigri.x.1.b.2", [spec(1, "true")])  # array 30
    slurm.jobs = [j for j in slurm.jobs if j["array_job_id"] != 30]  # slurmctld forgot it (restarted clean)
    states = adapter.states(["10_1", "10_2", *ids])
    assert {rid: s.state for rid, s in states.items()} == {
        "10_1": RemoteState.RUNNING,
        "10_2": RemoteState.UNKNOWN,  # its array does not list it
        "30_1": RemoteState.UNKNOWN,  # its array is gone: "Invalid job id specified"
    }
    adapter.close()
    slurm.asked.clear()
    assert mocked(tmp_path, slurm, clock).capacity().grid_used == 1 and slurm.asked == ["nodes", "job/10"]


def test_activity_is_news_when_a_live_task_ends_not_when_cigri_submits(tmp_path):
    slurm = Cluster22([])
    clock = FakeClock()
    adapter = mocked(tmp_path, slurm, clock)
    idle = adapter.activity()
    assert slurm.asked == []  # nothing of cigri's on the cluster: no probe at all
    ids = adapter.submit("cigri.x.1.b.1", [spec(1, "true"), spec(2, "true")])
    assert adapter.activity() == idle and slurm.asked == ["POST job/submit", "job/30"]  # the submission is no news
    assert adapter.activity() == idle and len(slurm.asked) == 2  # at most one probe per ACTIVITY_EVERY
    clock.sleep(0.6)
    slurm.set_state(30, 1, "RUNNING")
    assert adapter.activity() == idle and len(slurm.asked) == 3  # a start is no news either
    clock.sleep(0.6)
    slurm.set_state(30, 1, "COMPLETED")
    news = adapter.activity()
    assert news != idle and len(slurm.asked) == 4
    assert adapter.states(ids)["30_1"].state == RemoteState.EXITED and len(slurm.asked) == 4  # the probe's read
    clock.sleep(0.6)
    slurm.set_state(30, 2, "COMPLETED")
    assert adapter.states(ids)["30_2"].state == RemoteState.EXITED  # a pass saw it first: no news after it
    clock.sleep(0.6)
    assert adapter.activity() == news
    assert slurm.asked[-1] == "job/30" and len(slurm.asked) == 5  # nothing live left: no more probes
    cancelled = adapter.submit("cigri.x.1.b.2", [spec(1, "true")])  # array 40
    adapter.cancel(cancelled)  # what cigri cancels it no longer follows: its end is no news
    slurm.set_state(40, 1, "CANCELLED")
    clock.sleep(0.6)
    assert adapter.activity() == news and slurm.asked[-2:] == ["job/40", "DELETE job/40"]
    adapter.close()


# ---- with the local Slurm ---------------------------------------------------------------------------


@pytest.fixture
def rest(slurm, tmp_path):
    """The adapter as cigritest, its outputs in a fresh folder made through ssh (removed afterwards)."""
    token_file = tmp_path / "token"
    token_file.write_text(f"SLURM_JWT={slurm['SLURM_JWT_USER']}\n")
    token_file.chmod(0o600)
    outputs = f"/tmp/cigri-rest-{uuid.uuid4().hex[:8]}"
    config = {
        "url": slurm["SLURMRESTD_URL"],
        "user": slurm["SLURM_TEST_USER"],
        "token_file": str(token_file),
        "partition": slurm["SLURM_PARTITION"],
        "output_dir": outputs,
        "host": slurm["SSH_HOST"],
        "port": int(slurm["SSH_PORT"]),
        "identity_file": slurm["SSH_KEY"],
        "timeout": 20,
    }
    adapter = SlurmRest(Cluster("rest", "slurm-rest", config), AdapterContext(tmp_path, RealClock()))
    assert adapter.runner.run(["mkdir", "-p", outputs]).ok
    yield adapter
    adapter.runner.run(["rm", "-rf", outputs])
    adapter.close()


def key() -> str:
    return f"cigri.resttest-{uuid.uuid4().hex[:8]}.b.1"


@pytest.mark.slurm
def test_a_batch_runs_with_exit_codes_literal_words_and_is_found_again(rest, tmp_path):
    pwned = f"/tmp/cigri-pwned-{uuid.uuid4().hex[:8]}"
    words = [w.format(pwned=pwned) for w in NASTY]
    body = 'echo "$CIGRI_JOB_NAME" "$PWD"; printf "%s|" "$@"; echo; echo "err $CIGRI_JOB_ID" >&2; exit $CIGRI_JOB_ID'
    specs = [spec(i, "/bin/sh", "-c", body, "sh", *words) for i in range(5)]
    batch = key()
    ids = rest.submit(batch, specs)
    assert len(ids) == 5 and ids[0].endswith("_1")
    assert rest.find_batch(batch) == ids and rest.find_batch(key()) is None
    states = wait_for(lambda: finished(rest, ids), timeout=25, interval=0.3)
    assert [states[i].exit_code for i in ids] == [0, 1, 2, 3, 4]
    assert all(states[i].state == RemoteState.EXITED and states[i].ended_at for i in ids)
    assert rest.tail(ids[3], "stdout", 5).splitlines() == ["j3 /home/cigritest", "|".join(words) + "|"]
    assert rest.tail(ids[3], "stderr", 5) == "err 3"
    assert rest.find_batch(batch) == ids
    assert not Path(pwned).exists()


@pytest.mark.slurm
def test_slurmrestd_gives_an_array_whole_by_its_id_and_lists_all_jobs_or_none(rest):
    """What the adapter builds on, on the real slurmrestd: GET job/<array id> answers every task of the
    array, as GET jobs lists them; GET jobs?update_time=T answers HTTP 304 when no job changed since T,
    and otherwise every job, changed or not (so it cannot stand in for the reads by array)."""
    ids = rest.submit(key(), [spec(i, "sleep", "60") for i in (1, 2, 3)])
    later: list[str] = []
    try:
        wait_for(lambda: all_in(rest.states(ids), ids, RemoteState.RUNNING), 20, 0.3)
        since = int(time.time()) + 1
        wait_for(lambda: time.time() >= since + 1, timeout=5)
        later = rest.submit(key(), [spec(1, "true")])  # a change after `since`, none to the first array
        api, array = f"/slurm/{rest.api}", int(ids[0].split("_")[0])
        listing = rest.client.get(f"{api}/jobs", params={"update_time": since})
        assert listing.status_code == 200
        listed = {(j["array_job_id"], j["array_task_id"], j["job_state"]) for j in listing.json()["jobs"]}
        ours = {job for job in listed if job[0] == array}
        assert ours == {(array, i, "RUNNING") for i in (1, 2, 3)}  # unchanged since, listed all the same
        whole = rest.client.get(f"{api}/job/{array}").json()["jobs"]
        assert {(j["array_job_id"], j["array_task_id"], j["job_state"]) for j in whole} == ours
        assert rest.client.get(f"{api}/jobs", params={"update_time": int(time.time()) + 3600}).status_code == 304
    finally:
        rest.cancel(ids + later)


@pytest.mark.slurm
def test_activity_changes_once_a_job_ends(rest):
    ids = rest.submit(key(), [spec(1, "sleep", "2")])
    token = rest.activity()
    wait_for(lambda: rest.activity() != token, timeout=30, interval=0.05)
    assert rest.states(ids)[ids[0]].state == RemoteState.EXITED


def killed_or_why(rest: SlurmRest, ids: list[str], task: str) -> dict:
    """The states once ``task`` is seen killed (slurmctld marks a running task cancelled as it takes the
    kill); else a failure that tells what was seen and Slurm's record of the task (CI saw this wait run
    out once, and nothing told why)."""
    seen: list[str] = []

    def killed():
        states = rest.states(ids)
        seen.append(states[task].state.value)
        return states[task].state == RemoteState.KILLED and states

    try:
        return wait_for(killed, 20, 0.2)
    except AssertionError:
        record = {k: rest.details(task).get(k) for k in ("job_id", "job_state", "state_reason", "end_time")}
        raise AssertionError(f"{task} not seen killed: {'/'.join(dict.fromkeys(seen))}; Slurm says {record}") from None


@pytest.mark.slurm
def test_cancel_kills_running_tasks_one_or_all(rest):
    ids = rest.submit(key(), [spec(1, "sleep", "60"), spec(2, "sleep", "60")])
    try:
        wait_for(lambda: all_in(rest.states(ids), ids, RemoteState.RUNNING), 20, 0.3)
        capacity = rest.capacity()
        assert capacity.total == 8 and capacity.grid_used >= 2 and capacity.used >= 2
        rest.cancel(ids[:1])  # one task of the array
        states = killed_or_why(rest, ids, ids[0])
        assert states[ids[0]].reason == "cancelled" and states[ids[1]].state == RemoteState.RUNNING
        rest.cancel(ids)  # what is left: the whole array
        states = wait_for(lambda: finished(rest, ids), 10, 0.2)
        assert [states[i].state for i in ids] == [RemoteState.KILLED, RemoteState.KILLED]
    finally:
        rest.cancel(ids)


@pytest.mark.slurm
def test_live_refusals_map_to_submit_and_transport_errors(slurm, rest, tmp_path):
    wrong = SlurmRest(
        Cluster("rest", "slurm-rest", {**rest.config, "partition": "nope"}), AdapterContext(tmp_path, RealClock())
    )
    assert "Invalid partition name" in refusal(wrong, lambda a: a.submit(key(), [spec(1, "true")]), SubmitError)
    bad = tmp_path / "bad-token"
    bad.write_text(TOKEN)
    config = {**rest.config, "token_file": str(bad)}
    denied = SlurmRest(Cluster("rest", "slurm-rest", config), AdapterContext(tmp_path, RealClock()))
    assert "authentication refused (HTTP 500" in refusal(denied, SlurmRest.capacity, TransportError)


@pytest.mark.slurm
def test_a_200_job_campaign_completes_through_slurmrestd(cli, slurm, shared_dir, tmp_path):
    cli(
        "gridclusters",
        "add",
        "rest",
        "--adapter",
        "slurm-rest",
        *rest_cluster_options(slurm, tmp_path / "token"),
        "--output-dir",
        str(shared_dir),
    )
    script = job_script(shared_dir)
    params = [f"r{i:03d} 'x; rm -rf ~' '$(touch pwned)'" for i in range(198)] + ["bad1 fail", "bad2 fail"]
    cid = cli.submit(
        write_jdl(
            shared_dir, exec_file=str(script), exec_directory=str(shared_dir), params=params, clusters={"rest": {}}
        )
    )
    cli.until_done(timeout=300, code=13)  # an open event blocks the campaign
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["failed"], row["total"]) == (198, 2, 200)
    lines = runs(shared_dir)
    assert sorted(line.split()[0] for line in lines) == sorted(p.split()[0] for p in params)  # each once
    assert {line.split(" ", 1)[1] for line in lines if line.startswith("r")} == {"[x; rm -rf ~] [$(touch pwned)]"}
    events = cli.json("gridevents", "-c", str(cid), "-e", "EXIT_ERROR")
    assert len(events) == 2
    assert all("exited with status 3" in e["message"] and "failing on purpose" in e["message"] for e in events)
