"""The Slurm adapters' parsers on outputs recorded from a real Slurm 22.05, and on synthetic lines in the
same format for the states that Slurm cannot provoke. No running Slurm is needed.

The fixtures are in tests/fixtures/slurm, written by scripts/record-slurm-outputs.sh; their README says
which job is in which state. Each scenario is an array named ``cigri.record.<scenario>``; arrays.txt gives
its array id. A fake CommandRunner answers slurm-ssh's commands with the recorded outputs, and an httpx
MockTransport answers slurm-rest's requests with the recorded JSON.
"""

from __future__ import annotations

import json
import string
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cigri.adapters import AdapterContext
from cigri.adapters.slurm import STATES, SlurmSsh, exit_status, kill_cause, translate
from cigri.adapters.slurm_rest import SlurmRest
from cigri.adapters.transport import Result
from cigri.clock import RealClock
from cigri.errors import AdapterError
from cigri.model import Capacity, Cluster, KillCause, RemoteState, RemoteStatus

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"
# the command the fixtures were recorded with, which must stay the one SlurmSsh._our_jobs runs: if either
# changes, the fake runner refuses the command and the fixtures must be recorded again
SQUEUE_FIELDS = "JobArrayID:|,ArrayJobID:|,State:|,Reason:|,exit_code:|,StartTime:|,EndTime:|,NumCPUs:|,Name:"
SQUEUE = ("squeue", "--me", "-h", "-r", "-t", "all", "-O", SQUEUE_FIELDS)
SINFO = ("sinfo", "-h", "-o", "%C")
HOME = ("sh", "-c", 'printf %s "$HOME"')
USER = "cigritest"
MOMENTS = ("running", "ended")

PENDING, RUNNING, EXITED, KILLED, UNKNOWN = (
    RemoteState.PENDING,
    RemoteState.RUNNING,
    RemoteState.EXITED,
    RemoteState.KILLED,
    RemoteState.UNKNOWN,
)
ANY = object()  # a reason the test does not check (squeue and slurmrestd word it differently)


def read_arrays() -> tuple[dict[str, tuple[str, int]], set[str]]:
    """{scenario: (array id, tasks)} and the preempted task ids, from arrays.txt."""
    arrays, preempted = {}, set()
    for line in (FIXTURES / "arrays.txt").read_text().splitlines():
        words = line.split()
        if words[0] == "preempted":
            preempted = set(words[1].split(","))
        else:
            arrays[words[0]] = (words[1], int(words[2]))
    return arrays, preempted


ARRAYS, PREEMPTED = read_arrays()


def task(scenario: str, index: int) -> str:
    return f"{ARRAYS[scenario][0]}_{index}"


def tasks_of(scenario: str) -> list[str]:
    return [task(scenario, i) for i in range(1, ARRAYS[scenario][1] + 1)] if scenario in ARRAYS else []


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def squeue_rows(moment: str) -> list[list[str]]:
    """The recorded squeue lines as columns (the test's own plain reading, for expected counts)."""
    return [line.split("|") for line in text(f"squeue.{moment}.txt").splitlines() if line.strip()]


# ---- the adapters, fed with recorded outputs ----------------------------------------------------------------


class FakeClock:
    def __init__(self, now: float = 1_800_000_000.0):
        self.at = now

    def now(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.at += seconds


class FakeRunner:
    """A CommandRunner answering known commands with recorded outputs; any other command fails the test."""

    where = "fake"

    def __init__(self, answers: dict[tuple[str, ...], str | Result]):
        self.answers = {HOME: "/home/cigritest", **answers}
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = None) -> Result:
        argv = tuple(argv)
        self.calls.append(argv)
        assert argv in self.answers, f"unexpected command {argv}"
        answer = self.answers[argv]
        return answer if isinstance(answer, Result) else Result(argv, 0, answer, "")

    def close(self) -> None:
        pass


def ssh_adapter(tmp_path: Path, answers: dict, clock=None, **config) -> SlurmSsh:
    cluster = Cluster("rec", "slurm-ssh", {"accounting": "none", **config})
    return SlurmSsh(cluster, AdapterContext(tmp_path, clock or RealClock()), runner=FakeRunner(answers))


def recorded_ssh(tmp_path: Path, moment: str) -> SlurmSsh:
    return ssh_adapter(tmp_path, {SQUEUE: text(f"squeue.{moment}.txt"), SINFO: text(f"sinfo.{moment}.txt")})


def array_answer(jobs: dict, array_id: str) -> httpx.Response:
    """``GET .../job/<array id>`` as slurmrestd answers it: every record of that array in the listing (the
    pending record and the split tasks, ended ones included), or HTTP 500 "Invalid job id specified" when
    slurmctld holds none (both checked against the real slurmrestd by tests/test_slurm_rest.py)."""
    records = [job for job in jobs["jobs"] if str(job.get("array_job_id")) == array_id]
    if records:
        return httpx.Response(200, json={**jobs, "jobs": records})
    gone = {"description": f"Unable to find JobId={array_id}", "error_number": 2017}
    gone["error"] = "Invalid job id specified"
    return httpx.Response(500, json={"meta": jobs.get("meta", {}), "errors": [gone], "jobs": []})


def rest_adapter(tmp_path: Path, jobs: dict, nodes: dict | None = None) -> SlurmRest:
    """slurm-rest on a MockTransport serving ``jobs`` and ``nodes`` as GET .../jobs and .../nodes, each
    array of ``jobs`` as GET .../job/<array id>, and the recorded ping for the recorded OpenAPI version
    (404 for the others, as slurmrestd answers). Its ``requests`` list the paths asked, in order."""
    ping = json.loads(text("rest-ping.json"))
    version = ping["meta"]["plugin"]["type"].split("/")[1]
    token = tmp_path / "token"
    token.write_text("SLURM_JWT=recorded.token\n")
    requests: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        assert request.method == "GET"
        assert request.headers["X-SLURM-USER-NAME"] == USER
        assert request.headers["X-SLURM-USER-TOKEN"] == "recorded.token"
        requests.append(request.url.path)
        answers = {"ping": ping, "jobs": jobs, "nodes": nodes}
        prefix, _, leaf = request.url.path.rpartition("/")
        if prefix == f"/slurm/{version}/job" and leaf.isdigit():
            return array_answer(jobs, leaf)
        if prefix != f"/slurm/{version}" or answers.get(leaf) is None:
            return httpx.Response(404, text="Not Found")
        return httpx.Response(200, json=answers[leaf])

    config = {"url": "https://rest.example:6820", "user": USER, "token_file": str(token), "home": "/home/cigritest"}
    adapter = SlurmRest(
        Cluster("rec", "slurm-rest", config),
        AdapterContext(tmp_path, RealClock()),
        transport=httpx.MockTransport(serve),
    )
    adapter.requests = requests
    return adapter


def recorded_rest(tmp_path: Path, moment: str) -> SlurmRest:
    jobs = json.loads(text(f"rest-jobs.{moment}.json"))
    return rest_adapter(tmp_path, jobs, json.loads(text(f"rest-nodes.{moment}.json")))


# ---- what each recorded task must be ------------------------------------------------------------------------


def expected(moment: str) -> dict[str, tuple[RemoteState, int | None, object]]:
    """(state, exit code, reason) of every task of the recording at ``moment``; see the fixtures' README."""
    cancelled = (KILLED, None, "cancelled")
    out = {
        task("ok", 1): (EXITED, 0, ANY),
        task("ok", 2): (EXITED, 0, ANY),
        task("fail", 1): (EXITED, 3, "NonZeroExitCode"),
        task("signal", 1): (EXITED, 137, "JobLaunchFailure"),
        task("wait", 2): (UNKNOWN, None, ""),  # cancelled while pending: Slurm lists it nowhere
        task("run", 1): cancelled,
        "999999_1": (UNKNOWN, None, ""),  # never was
    }
    if moment == "running":
        out |= {
            task("wait", 1): (PENDING, None, "BeginTime"),
            task("wait", 3): (PENDING, None, "BeginTime"),
            task("held", 1): (PENDING, None, "JobHeldUser"),
            task("run", 2): (RUNNING, None, ANY),
            task("suspend", 1): (RUNNING, None, ANY),  # SUSPENDED
            task("requeue", 1): (PENDING, None, ANY),  # requeued in held state
            **{rid: (PENDING, None, "BeginTime") for rid in PREEMPTED},  # requeued: waits to start again
            **{rid: (RUNNING, None, ANY) for rid in tasks_of("preemptor")},
            **{rid: (RUNNING, None, ANY) for rid in tasks_of("timeout")},
        }
    else:
        for scenario in ("wait", "held", "run", "suspend", "requeue", "filler", "preemptor"):
            out |= {rid: cancelled for rid in tasks_of(scenario) if rid != task("wait", 2)}
        out |= {rid: (KILLED, None, "timeout") for rid in tasks_of("timeout")}
    return out


def check(statuses: dict[str, RemoteStatus], wanted: dict[str, tuple[RemoteState, int | None, object]]) -> None:
    got = {rid: (s.state, s.exit_code, s.reason) for rid, s in statuses.items()}
    want = {rid: (w[0], w[1], got[rid][2] if w[2] is ANY else w[2]) for rid, w in wanted.items()}
    assert got == want


def all_ids(moment: str) -> list[str]:
    return sorted({*expected(moment), *(rid for scenario in ARRAYS for rid in tasks_of(scenario))})


@pytest.mark.parametrize("moment", MOMENTS)
def test_squeue_states_of_the_recorded_jobs(tmp_path, moment):
    adapter = recorded_ssh(tmp_path, moment)
    statuses = adapter.states(list(expected(moment)))
    check(statuses, expected(moment))
    assert adapter.runner.calls == [SQUEUE]  # one bulk query; accounting is off


@pytest.mark.parametrize("moment", MOMENTS)
def test_rest_states_of_the_recorded_jobs(tmp_path, moment):
    adapter = recorded_rest(tmp_path, moment)
    check(adapter.states(list(expected(moment))), expected(moment))


@pytest.mark.parametrize("moment", MOMENTS)
def test_the_filler_tasks_run_or_wait_and_the_preempted_one_waits(tmp_path, moment):
    for adapter in (recorded_ssh(tmp_path, moment), recorded_rest(tmp_path, moment)):
        statuses = adapter.states(tasks_of("filler"))
        if moment == "running":
            assert {s.state for s in statuses.values()} <= {RUNNING, PENDING}
            assert PREEMPTED and [statuses[rid].state for rid in PREEMPTED] == [PENDING] * len(PREEMPTED)
        else:
            assert {s.state for s in statuses.values()} == {KILLED}


@pytest.mark.parametrize("moment", MOMENTS)
def test_both_adapters_agree_on_every_recorded_task(tmp_path, moment, monkeypatch):
    # squeue prints local times, recorded in UTC; slurmrestd prints epoch seconds
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        ids = all_ids(moment)
        by_ssh = recorded_ssh(tmp_path, moment).states(ids)
        by_rest = recorded_rest(tmp_path, moment).states(ids)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert {rid: (s.state, s.exit_code) for rid, s in by_ssh.items()} == {
        rid: (s.state, s.exit_code) for rid, s in by_rest.items()
    }
    over = [rid for rid, s in by_rest.items() if s.state in (EXITED, KILLED)]
    assert over
    for rid in over:
        assert (by_ssh[rid].started_at, by_ssh[rid].ended_at) == (by_rest[rid].started_at, by_rest[rid].ended_at)
        assert by_rest[rid].ended_at is not None


@pytest.mark.parametrize("moment", MOMENTS)
def test_slurm_none_reason_means_no_reason(tmp_path, moment):
    """squeue shows "None" where Slurm has no reason, which slurm-rest reads as "" (no reason)."""
    ids = all_ids(moment)
    statuses = recorded_ssh(tmp_path, moment).states(ids)
    assert {rid: s.reason for rid, s in statuses.items() if s.reason == "None"} == {}


@pytest.mark.parametrize("moment", MOMENTS)
def test_capacity_from_sinfo_and_squeue(tmp_path, moment):
    allocated, _idle, other, total = (int(x) for x in text(f"sinfo.{moment}.txt").split("/"))
    ours = [row for row in squeue_rows(moment) if row[8].startswith("cigri.")]
    grid_used = sum(int(row[7]) for row in ours if row[2] == "RUNNING")
    queued = sum(1 for row in ours if row[2] == "PENDING")
    capacity = recorded_ssh(tmp_path, moment).capacity()
    assert capacity == Capacity(total=total - other, used=allocated, grid_used=grid_used, queued=queued)
    assert ((capacity.grid_used, capacity.queued) == (0, 0)) == (moment == "ended")  # the fixtures show both cases


@pytest.mark.parametrize("moment", MOMENTS)
def test_rest_capacity_from_nodes_and_jobs(tmp_path, moment):
    """The nodes' CPUs as sinfo counted them at the same moment; grid_used and queued over the recorded
    arrays (rest-jobs keeps only those), as squeue lists them."""
    allocated, _idle, other, total = (int(x) for x in text(f"sinfo.{moment}.txt").split("/"))
    arrays = {array_id for array_id, _ in ARRAYS.values()}
    ours = [row for row in squeue_rows(moment) if row[1] in arrays]
    grid_used = sum(int(row[7]) for row in ours if row[2] == "RUNNING")
    queued = sum(1 for row in ours if row[2] == "PENDING")
    capacity = recorded_rest(tmp_path, moment).capacity()
    assert capacity == Capacity(total=total - other, used=allocated, grid_used=grid_used, queued=queued)


def test_down_and_drained_cpus_are_counted_apart_over_ssh_and_rest(tmp_path):
    """sinfo's "other" CPUs (down, drained) and the CPUs of nodes slurmrestd says down or draining are not
    slots, but gridclusters -u shows them unavailable."""
    ssh = ssh_adapter(tmp_path, {SQUEUE: text("squeue.ended.txt"), SINFO: "2/4/6/12\n"})
    assert ssh.capacity() == Capacity(total=6, used=2, grid_used=0, queued=0, down=6)
    nodes = json.loads(text("rest-nodes.running.json"))
    up = nodes["nodes"][0]
    drained = {**up, "name": "n2", "state": "idle", "state_flags": ["DRAIN"], "alloc_cpus": 2}
    down = {**up, "name": "n3", "state": "down", "alloc_cpus": 0}
    rest = rest_adapter(tmp_path, json.loads(text("rest-jobs.ended.json")), {**nodes, "nodes": [up, drained, down]})
    capacity = rest.capacity()
    assert (capacity.total, capacity.used, capacity.down) == (8 + 2, 8 + 2, 6 + 8)


@pytest.mark.parametrize("moment", MOMENTS)
def test_rest_find_batch_gives_every_task_of_a_recorded_array(tmp_path, moment):
    adapter = recorded_rest(tmp_path, moment)
    for scenario in ARRAYS:
        assert adapter.find_batch(f"cigri.record.{scenario}") == tasks_of(scenario)
    assert adapter.find_batch("cigri.record.never") is None


def test_ssh_activity_probes_squeue_now_and_then_and_is_news_when_a_live_task_ends(tmp_path):
    clock = FakeClock()
    elsewhere = "cigri.other-instance.1.b.1"  # the same Slurm user's, not jobs this cigri follows

    def listing(*lines: tuple[str, str]) -> str:
        return "\n".join(
            squeue_line(rid, state, 0, "None", name=elsewhere if rid == "77_1" else "cigri.x") for rid, state in lines
        )

    adapter = ssh_adapter(
        tmp_path, {SQUEUE: listing(("42_1", "RUNNING"), ("42_2", "PENDING"), ("77_1", "RUNNING"))}, clock
    )
    calls = adapter.runner.calls
    idle = adapter.activity()
    assert calls == []  # cigri follows nothing yet: no probe
    assert adapter.states(["42_1", "42_2"])["42_1"].state == RUNNING and calls == [SQUEUE]
    assert adapter.activity() == idle and calls == [SQUEUE]  # read just now: no probe yet
    clock.sleep(0.6)
    adapter.runner.answers[SQUEUE] = listing(("42_1", "RUNNING"), ("42_2", "RUNNING"), ("77_1", "COMPLETED"))
    assert adapter.activity() == idle and calls == [SQUEUE] * 2  # one squeue; a start, another's end: no news
    adapter.runner.answers[SQUEUE] = listing(("42_1", "COMPLETED"), ("42_2", "RUNNING"))
    clock.sleep(0.6)
    assert adapter.activity() != idle and calls == [SQUEUE] * 3
    assert adapter.states(["42_1"])["42_1"].state == EXITED and calls == [SQUEUE] * 3  # the probe's read


def test_ssh_find_batch_reads_the_ids_file_written_at_submission(tmp_path):
    batch = "cigri.7.1.b.1"
    folder = "/home/cigritest/.cigri"
    look = (
        "sh",
        "-c",
        f"[ -e {folder}/{batch}.ids ] && cat {folder}/{batch}.ids && wc -l < {folder}/{batch}.args || true",
    )
    assert ssh_adapter(tmp_path, {look: "1075\n2\n"}).find_batch(batch) == ["1075_1", "1075_2"]
    assert ssh_adapter(tmp_path, {look: "1075;cigri\n3\n"}).find_batch(batch) == ["1075_1", "1075_2", "1075_3"]
    assert ssh_adapter(tmp_path, {look: ""}).find_batch(batch) is None


def test_sacct_lines_of_finished_jobs_when_slurmctld_forgot_them(tmp_path):
    """The recorded ``sacct -c`` lines have the fields SlurmSsh._accounting asks for; jobcomp names the tasks by
    their raw job ids, which single-task arrays share with their array."""
    ids = [ARRAYS["fail"][0], ARRAYS["signal"][0], ARRAYS["requeue"][0], "999999"]
    sacct = ("sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode,Start,End", "-j", ",".join(ids))
    adapter = ssh_adapter(tmp_path, {SQUEUE: "", sacct: text("sacct-accounting.ended.txt")}, accounting="sacct")
    statuses = adapter.states(ids)
    got = {rid: (s.state, s.exit_code, s.reason) for rid, s in statuses.items()}
    assert got == {
        ids[0]: (EXITED, 3, ""),
        ids[1]: (EXITED, 137, ""),
        ids[2]: (KILLED, None, "cancelled"),  # its last line: requeued (PENDING), then cancelled
        "999999": (UNKNOWN, None, ""),
    }
    assert statuses[ids[0]].ended_at is not None


def test_sacct_refused_without_slurmdbd_leaves_tasks_unknown(tmp_path):
    """This Slurm has no slurmdbd: its sacct says so (rc 1) and the tasks stay UNKNOWN, never done."""
    sacct = ("sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode,Start,End", "-j", "5_1")
    refusal = Result(sacct, 1, "", "Slurm accounting storage is disabled\n")
    adapter = ssh_adapter(tmp_path, {SQUEUE: "", sacct: refusal}, accounting="sacct")
    assert adapter.states(["5_1"]) == {"5_1": RemoteStatus("5_1", UNKNOWN)}


@pytest.mark.parametrize("moment", MOMENTS)
def test_why_slurm_ended_the_recorded_tasks(tmp_path, moment):
    """The recorded TIMEOUT is a walltime kill, the recorded scancels are admin kills; a task that ran to its
    end, failed on its own, or is not over has no kill cause."""
    ids = all_ids(moment)
    for adapter in (recorded_ssh(tmp_path, moment), recorded_rest(tmp_path, moment)):
        causes = {rid: s.cause for rid, s in adapter.states(ids).items()}
        for scenario in ("ok", "fail", "signal"):
            assert [causes[rid] for rid in tasks_of(scenario)] == [None] * len(tasks_of(scenario))
        assert causes[task("run", 1)] == KillCause.ADMIN
        if moment == "ended":
            assert causes[task("timeout", 1)] == KillCause.WALLTIME
            assert {causes[rid] for rid in tasks_of("filler")} == {KillCause.ADMIN}
        else:
            assert {causes[rid] for rid in (*tasks_of("timeout"), *PREEMPTED, *tasks_of("wait"))} == {None}


# ---- states this Slurm cannot provoke: synthetic lines in the recorded formats --------------------------------

SYNTHETIC = [
    # (Slurm state, raw exit status, reason) -> (state, exit code, reason)
    (("OUT_OF_MEMORY", 0, "OutOfMemory"), (EXITED, 137, "OutOfMemory")),
    # Slurm's own OOM status: SIG_OOM (253), which sacct shows as 0:125; as a shell would say: killed, 137
    (("OUT_OF_MEMORY", 253, "OutOfMemory"), (EXITED, 137, "OutOfMemory")),
    (("NODE_FAIL", 0, "NodeDown"), (KILLED, None, "node_fail")),
    (("BOOT_FAIL", 0, "None"), (KILLED, None, "boot_fail")),
    (("DEADLINE", 0, "DeadLine"), (KILLED, None, "deadline")),
    (("PREEMPTED", 15, "None"), (KILLED, None, "preempted")),
    (("TIMEOUT", 15, "TimeLimit"), (KILLED, None, "timeout")),
    (("CANCELLED by 0", 15, "None"), (KILLED, None, "cancelled")),
    (("CANCELLED+", 0, "None"), (KILLED, None, "cancelled")),
    (("SPECIAL_EXIT", 768, "NonZeroExitCode"), (EXITED, 3, "NonZeroExitCode")),
    (("SUSPENDED", 0, "Preempted"), (RUNNING, None, "Preempted")),  # by gang scheduling (recorded: by scontrol)
    (("COMPLETING", 768, "NonZeroExitCode"), (RUNNING, None, "NonZeroExitCode")),
    (("REQUEUE_HOLD", 0, "JobHeldUser"), (PENDING, None, "JobHeldUser")),
    (("REQUEUED", 0, "BeginTime"), (PENDING, None, "BeginTime")),
    (("CONFIGURING", 0, "Resources"), (PENDING, None, "Resources")),
    (("WEIRD_NEW_STATE", 0, "Resources"), (UNKNOWN, None, "Resources")),
]


CAUSES = [
    ("PREEMPTED", KillCause.PREEMPTED),
    ("TIMEOUT", KillCause.WALLTIME),
    ("DEADLINE", KillCause.WALLTIME),
    ("OUT_OF_MEMORY", KillCause.MEMORY),
    ("CANCELLED by 0", KillCause.ADMIN),
    ("CANCELLED+", KillCause.ADMIN),
    ("NODE_FAIL", KillCause.OTHER),
    ("BOOT_FAIL", KillCause.OTHER),
    ("REVOKED", KillCause.OTHER),
]


@pytest.mark.parametrize(("state", "cause"), CAUSES, ids=[c[0] for c in CAUSES])
def test_why_slurm_killed_a_task(tmp_path, state, cause):
    ssh = ssh_adapter(tmp_path, {SQUEUE: squeue_line("42_1", state, 15, "None") + "\n"})
    rest = rest_adapter(tmp_path, {"meta": {}, "errors": [], "jobs": [rest_job("42_1", state, 15, "None")]})
    assert [adapter.states(["42_1"])["42_1"].cause for adapter in (ssh, rest)] == [cause, cause]


@given(word=st.text(string.ascii_uppercase + "_ +", min_size=0, max_size=20))
def test_a_kill_word_slurm_did_not_have_is_other_never_an_error(word):
    name = word.split()[0].rstrip("+") if word.split() else ""
    assert kill_cause(word) == (dict((s.split()[0].rstrip("+"), c) for s, c in CAUSES).get(name, KillCause.OTHER))


def squeue_line(remote_id: str, state: str, raw: int, reason: str, name: str = "cigri.synthetic") -> str:
    """A line as recorded in squeue.*.txt (see the failed task of the recording)."""
    array = remote_id.split("_")[0]
    return f"{remote_id}|{array}|{state}|{reason}|{raw}|2026-11-22T12:38:15|2026-11-22T12:38:20|1|{name}"


def rest_job(remote_id: str, state: str, raw: int, reason: str, name: str = "cigri.synthetic", user: str = USER):
    """The recorded JSON of the failed task, with another id, state, exit status, reason, name or user."""
    recorded = json.loads(text("rest-jobs.ended.json"))
    failed = next(j for j in recorded["jobs"] if j["array_job_id"] == int(ARRAYS["fail"][0]))
    array, index = (int(x) for x in remote_id.split("_"))
    job = {**failed, "job_id": array, "array_job_id": array, "array_task_id": index, "name": name, "user_name": user}
    return job | {"job_state": state, "exit_code": raw, "state_reason": reason}


@pytest.mark.parametrize(("slurm", "want"), SYNTHETIC, ids=[f"{s[0]}-{s[1]}" for s, _ in SYNTHETIC])
def test_states_slurm_cannot_provoke_here(tmp_path, slurm, want):
    state, raw, reason = slurm
    ssh = ssh_adapter(tmp_path, {SQUEUE: squeue_line("42_1", state, raw, reason) + "\n"})
    rest = rest_adapter(tmp_path, {"meta": {}, "errors": [], "jobs": [rest_job("42_1", state, raw, reason)]})
    got = {adapter.__class__.__name__: adapter.states(["42_1"])["42_1"] for adapter in (ssh, rest)}
    assert {name: (s.state, s.exit_code, s.reason) for name, s in got.items()} == {"SlurmSsh": want, "SlurmRest": want}


def test_jobs_of_others_or_not_named_by_cigri_are_not_ours(tmp_path):
    lines = [
        squeue_line("42_1", "COMPLETED", 0, "None", name="probe-env"),
        squeue_line("42_2", "COMPLETED", 0, "None", name="xcigri.1"),
        "garbage line",
        "42_3|42|COMPLETED",
        "",
    ]
    assert ssh_adapter(tmp_path, {SQUEUE: "\n".join(lines)}).states(["42_1", "42_2", "42_3"]) == {
        rid: RemoteStatus(rid, UNKNOWN) for rid in ("42_1", "42_2", "42_3")
    }
    jobs = [
        rest_job("42_1", "COMPLETED", 0, "None", name="probe-env"),
        rest_job("42_2", "COMPLETED", 0, "None", user="someone"),
    ]
    adapter = rest_adapter(tmp_path, {"meta": {}, "errors": [], "jobs": jobs})
    assert adapter.states(["42_1", "42_2"]) == {rid: RemoteStatus(rid, UNKNOWN) for rid in ("42_1", "42_2")}


def sacct_states(tmp_path: Path, lines: list[str]) -> list[tuple[RemoteState, int | None, str]]:
    """What states() makes of slurmdbd's lines for tasks slurmctld no longer lists, in the order of ``lines``."""
    ids = [line.split("|")[0] for line in lines]
    sacct = ("sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode,Start,End", "-j", ",".join(ids))
    adapter = ssh_adapter(tmp_path, {SQUEUE: "", sacct: "\n".join(lines) + "\n"}, accounting="sacct")
    return [(s.state, s.exit_code, s.reason) for s in adapter.states(ids).values()]


def test_sacct_states_with_a_suffix(tmp_path):
    assert sacct_states(
        tmp_path,
        [
            "7_1|CANCELLED by 0|0:15|2026-11-22T12:38:15|2026-11-22T12:38:20",
            "7_2|CANCELLED by 1001|0:0|2026-11-22T12:38:15|2026-11-22T12:38:20",
            "7_3|RUNNING|0:0|2026-11-22T12:38:15|Unknown",  # not over: slurmdbd is behind, ask again later
        ],
    ) == [(KILLED, None, "cancelled"), (KILLED, None, "cancelled"), (UNKNOWN, None, "")]


def test_sacct_out_of_memory_is_a_kill_by_the_system(tmp_path):
    """sacct shows Slurm's OOM status (SIG_OOM, 253) as 0:125: a shell would say 137, as for squeue."""
    line = "7_1|OUT_OF_MEMORY|0:125|2026-11-22T12:38:15|2026-11-22T12:38:20"
    assert sacct_states(tmp_path, [line]) == [(EXITED, 137, "")]


# ---- exit statuses and the state table -----------------------------------------------------------------------


@given(code=st.integers(0, 255))
def test_exit_status_of_a_normal_exit_is_its_code(code):
    assert exit_status(code << 8) == code


@given(signal=st.integers(1, 64), core=st.booleans())
def test_exit_status_of_a_signal_is_128_plus_it(signal, core):
    assert exit_status(signal | (0x80 if core else 0)) == 128 + signal


def test_no_exit_status_is_none():
    assert exit_status(None) is None


unknown_states = st.text(string.ascii_uppercase + "_", min_size=1).filter(lambda s: s not in STATES)


@given(state=unknown_states, raw=st.integers(0, 0xFFFF))
def test_a_state_without_a_translation_is_unknown_never_done(state, raw):
    assert translate(state, raw)[0] == UNKNOWN


def test_ssh_hold_and_release_ignore_tasks_gone_and_report_other_errors(tmp_path):
    """What scontrol 22.05 says of a task gone or over (checked on the real Slurm by test_slurm_pause.py)."""
    uhold, release = ("scontrol", "uhold", "7_1", "8_1"), ("scontrol", "release", "7_1")
    gone = "8_1: Job has already finished\nslurm_suspend error: Invalid job id specified\n"
    adapter = ssh_adapter(
        tmp_path,
        {
            uhold: Result(uhold, 1, "", gone),
            release: Result(release, 1, "", "7_1: Access/permission denied\n"),
        },
    )
    adapter.hold(["7_1", "8_1"])
    with pytest.raises(AdapterError, match="Access/permission denied"):
        adapter.release(["7_1"])


def test_sacct_says_why_slurm_killed_a_task(tmp_path):
    """slurmdbd's recorded words for jobs slurmctld forgot: TIMEOUT, the preempted filler, an scancel."""
    recorded = text("sacct-accounting.ended.txt").splitlines()
    lines = [next(line for line in recorded if f"|{state}|" in line) for state in ("TIMEOUT", "PREEMPTED", "CANCELLED")]
    ids = [line.split("|")[0] for line in lines]
    sacct = ("sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode,Start,End", "-j", ",".join(ids))
    adapter = ssh_adapter(tmp_path, {SQUEUE: "", sacct: "\n".join(lines) + "\n"}, accounting="sacct")
    statuses = adapter.states(ids)
    assert [statuses[rid].cause for rid in ids] == [KillCause.WALLTIME, KillCause.PREEMPTED, KillCause.ADMIN]
