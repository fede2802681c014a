"""The contract OAR itself (tests/oar): clock, arrays, kills, REST flavours, faults and the fake commands.

Documented examples live in tests/oar/fixtures (sources in its README); the server must answer with their keys."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.oar.contract import OarError, OarState, param_lines
from tests.oar.fake_commands import install_fake_commands, main
from tests.oar.server import OarServer

FIXTURES = Path(__file__).parent / "oar" / "fixtures"
IDENT = {"X_REMOTE_IDENT": "cigritest"}


def fixture(name: str):
    return json.loads((FIXTURES / name).read_text())


def states(oar: OarState) -> dict[int, str]:
    return {job["id"]: job["state"] for job in oar.jobs()}


# the events of a running job that OAR 2.5.9 kills (oardel alone; after BESTEFFORT_KILL); a waiting job deleted
# gets FRAG_JOB_REQUEST alone
RUNNING_KILL = ["FRAG_JOB_REQUEST", "SEND_KILL_JOB", "SWITCH_INTO_ERROR_STATE"]


def event_types(job: dict) -> list[str]:
    return [event["type"] for event in job["events"]]


@pytest.fixture
def oar(tmp_path: Path) -> OarState:
    return OarState(tmp_path / "oar" / "state.json", cores=4)


@pytest.fixture
def api(oar: OarState):
    server = OarServer(oar.path, page_size=2, max_param_lines=5, hang_seconds=3)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def api3(oar: OarState):
    server = OarServer(oar.path, flavour="3", auth="bearer", token="secret")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def client(api: OarServer):
    with httpx.Client(base_url=api.url, headers=IDENT, timeout=5) as c:
        yield c


@pytest.fixture
def client3(api3: OarServer):
    with httpx.Client(base_url=api3.url, headers={"Authorization": "Bearer secret"}, timeout=5) as c:
        yield c


# -- the state machine on the injected clock ----------------------------------------------------------------------
def test_jobs_move_only_with_the_injected_clock(oar: OarState):
    [job_id] = oar.submit("alice", "/bin/run", "core=1,walltime=00:01:00", params=["a 5"])
    assert states(oar) == {job_id: "Waiting"}
    oar.advance(0)
    assert states(oar) == {job_id: "Launching"}
    oar.advance(1)
    assert states(oar) == {job_id: "Running"}
    oar.advance(4.5)
    assert states(oar) == {job_id: "Running"}
    oar.advance(0.5)
    job = oar.job(job_id)
    assert job["state"] == "Terminated"
    assert job["exit_code"] == 0
    assert job["stop_time"] - job["start_time"] == 6  # 1 s Launching, then 5 s Running
    assert event_types(job) == ["SWITCH_INTO_TERMINATE_STATE"]


def test_a_non_zero_exit_is_terminated_with_a_wait_status(oar: OarState):
    ids = oar.submit("alice", "/bin/run", params=["ok 1 0", "bad 1 1", "again 1 66"])
    oar.advance(10)
    assert [(j["state"], j["exit_code"]) for j in oar.jobs()] == [
        ("Terminated", 0),
        ("Terminated", 256),
        ("Terminated", 66 << 8),
    ]
    assert oar.job(ids[1])["exit_code"] >> 8 == 1


def test_an_array_is_one_job_per_line_with_indices_and_fifo_on_the_cores(oar: OarState):
    ids = oar.submit("alice", "/bin/run", "/nodes=1/core=2", params=param_lines("a 10\n\nb 10\n# comment\nc 10\n"))
    assert ids == [1, 2, 3]
    jobs = oar.jobs()
    assert [(j["array_id"], j["array_index"]) for j in jobs] == [(1, 1), (1, 2), (1, 3)]
    assert [j["command"] for j in jobs] == ["/bin/run a 10", "/bin/run b 10", "/bin/run c 10"]
    assert [j["params"] for j in jobs] == ["a 10", "b 10", "c 10"]
    oar.advance(2)
    assert states(oar) == {1: "Running", 2: "Running", 3: "Waiting"}  # 4 cores, 2 each
    oar.advance(9)
    assert states(oar) == {1: "Terminated", 2: "Terminated", 3: "Launching"}
    assert oar.submit("alice", "/bin/run", params=["d"]) == [4]


def test_a_single_job_behaves_as_its_shell_arguments_say(oar: OarState):
    [job_id] = oar.submit("alice", "/bin/run 'single' 3 2")
    oar.advance(10)
    job = oar.job(job_id)
    assert (job["state"], job["exit_code"], job["stop_time"] - job["start_time"]) == ("Terminated", 512, 4)
    assert (job["array_id"], job["array_index"], job["params"]) == (job_id, 1, "single 3 2")


def test_a_job_past_its_walltime_is_killed(oar: OarState):
    [job_id] = oar.submit("alice", "/bin/run", "core=1,walltime=0:0:30", params=["long 100"])
    oar.advance(40)
    job = oar.job(job_id)
    # as the real OAR 2.5.9 records a walltime kill
    kill = ["FRAG_JOB_REQUEST", "WALLTIME", "SEND_KILL_JOB", "SWITCH_INTO_ERROR_STATE"]
    assert (job["state"], job["exit_code"], event_types(job)) == ("Error", None, kill)
    assert job["walltime"] == 30


def test_the_default_walltime_is_two_hours(oar: OarState):
    [job_id] = oar.submit("alice", "/bin/run", "/nodes=1/core=1")
    assert oar.job(job_id)["walltime"] == 7200


def test_a_normal_job_kills_best_effort_jobs_for_their_cores(oar: OarState):
    be = oar.submit("alice", "/bin/run", "core=1", params=[f"be{i} 1000" for i in range(4)], types=["besteffort"])
    oar.advance(2)
    assert all(oar.job(i)["state"] == "Running" for i in be)
    assert oar.job(be[0])["queue"] == "besteffort"
    [normal] = oar.submit("bob", "/bin/run", "core=2", params=["n 5"])
    oar.advance(0)
    killed = [j for j in oar.jobs() if j["state"] == "Error"]
    assert [j["id"] for j in killed] == [be[2], be[3]]  # the youngest ones
    # as the real OAR 2.5.9 records a best-effort kill
    assert all(event_types(j) == ["BESTEFFORT_KILL", *RUNNING_KILL] for j in killed)
    assert oar.job(normal)["state"] == "Launching"


def test_besteffort_kill_on_demand(oar: OarState):
    [be] = oar.submit("alice", "/bin/run", types=["besteffort"], params=["be 100"])
    with pytest.raises(OarError):
        oar.besteffort_kill(be)  # still Waiting
    oar.advance(2)
    oar.besteffort_kill(be)
    assert (oar.job(be)["state"], event_types(oar.job(be))) == ("Error", ["BESTEFFORT_KILL", *RUNNING_KILL])


def test_delete_frags_the_job(oar: OarState):
    first, second = oar.submit("alice", "/bin/run", params=["a 100", "b 100"])
    oar.advance(2)
    assert "REGISTERED" in oar.delete(first)
    assert (oar.job(first)["state"], event_types(oar.job(first))) == ("Error", RUNNING_KILL)  # it was running
    oar.advance(200)
    assert "already" in oar.delete(second)
    assert oar.job(second)["state"] == "Terminated"


def test_oar_resubmits_a_job_under_a_new_id(oar: OarState):
    [old] = oar.submit("alice", "/bin/run", params=["a 100"])
    oar.advance(2)
    new = oar.resubmit_automatically(old)
    [event] = oar.job(old)["events"]
    assert (oar.job(old)["state"], event["type"]) == ("Error", "RESUBMIT_JOB_AUTOMATICALLY")
    assert re.search(r"\(new id = (\d+)\)", event["description"]).group(1) == str(new)
    assert (oar.job(new)["state"], oar.job(new)["resubmit_job_id"]) == ("Waiting", old)


def test_a_missing_working_directory_is_an_error(oar: OarState, tmp_path: Path):
    [job_id] = oar.submit("alice", "/bin/run", directory=str(tmp_path / "missing"), params=["a"])
    oar.advance(1)
    assert (oar.job(job_id)["state"], event_types(oar.job(job_id))) == ("Error", ["WORKING_DIRECTORY"])


def test_outputs_are_kept_and_written_in_the_launching_directory(oar: OarState, tmp_path: Path):
    [job_id] = oar.submit("alice", "/bin/run", directory=str(tmp_path), params=["fails 1 3"])
    oar.advance(5)
    stderr = oar.read_file(f"{tmp_path}/OAR.{job_id}.stderr")
    assert stderr.splitlines() == ["stderr of fails", "fails exited with status 3"]
    assert (tmp_path / f"OAR.{job_id}.stdout").read_text() == "stdout of fails\n"


def test_a_named_jobs_outputs_carry_its_name(oar: OarState, tmp_path: Path):
    """As the real OAR 2.5.9 names them: OAR.<name>.<id>.stdout when the job has a name."""
    [job_id] = oar.submit("alice", "/bin/run", directory=str(tmp_path), params=["x 1 0"], name="cigri.k.1")
    assert (oar.job(job_id)["stdout_file"], oar.job(job_id)["stderr_file"]) == (
        f"OAR.cigri.k.1.{job_id}.stdout",
        f"OAR.cigri.k.1.{job_id}.stderr",
    )


def test_a_job_naming_no_directory_runs_in_the_contract_home_not_the_machine_one(oar: OarState, tmp_path: Path):
    home = tmp_path / "oar" / "homes" / "cigritest"
    home.mkdir(parents=True)
    [job_id] = oar.submit("cigritest", "/bin/run", params=["x 1 0"])
    oar.advance(5)
    assert oar.job(job_id)["launching_directory"] == str(home) == oar.home("cigritest")
    assert (home / f"OAR.{job_id}.stdout").read_text() == "stdout of x\n"


def test_too_many_cores_is_refused(oar: OarState):
    with pytest.raises(OarError, match="not enough resources"):
        oar.submit("alice", "/bin/run", "/nodes=2/core=4")


# -- OAR 2.5 REST ------------------------------------------------------------------------------------------------
def test_ident_is_required(api: OarServer):
    with httpx.Client(base_url=api.url, timeout=5) as anonymous:
        answer = anonymous.get("/jobs/details")
    assert answer.status_code == 401
    assert set(answer.json()) == set(fixture("oar25-error.json"))


def test_post_jobs_answers_as_documented(client: httpx.Client, oar: OarState, tmp_path: Path):
    body = {
        "resource": "/nodes=1/core=1,walltime=00:10:00",
        "command": "/home/cigritest/run.sh",
        "param_file": "a 5\nb 5 1\n",
        "type": ["besteffort"],
        "name": "cigri.12",
        "directory": str(tmp_path),
        "property": "cluster='x'",
        "project": "p",
    }
    answer = client.post("/jobs", json=body)
    assert answer.status_code == 201
    documented = fixture("oar25-post-jobs.json")["response"]
    assert set(answer.json()) == set(documented)
    assert answer.json()["cmd_output"] == "OAR_JOB_ID=1\nOAR_JOB_ID=2\nOAR_ARRAY_ID=1\n"
    job = oar.job(2)
    assert (job["name"], job["types"], job["queue"], job["owner"]) == (
        "cigri.12",
        ["besteffort"],
        "besteffort",
        "cigritest",
    )
    assert (job["project"], job["properties"], job["walltime"]) == ("p", "cluster='x'", 600)
    single = client.post("/jobs", json={"resource": "core=1", "command": "x", "type": "besteffort"}).json()
    assert single["cmd_output"] == (FIXTURES / "oarsub-single.txt").read_text().replace("4", str(single["id"]))


def test_job_details_have_the_documented_keys(client: httpx.Client, oar: OarState):
    ids = oar.submit("cigritest", "/bin/run", params=["a 1", "b 1 2"], types=["besteffort"])
    oar.advance(5)
    detailed = client.get(f"/jobs/{ids[1]}/details").json()
    assert set(fixture("oar25-job-5232.json")) <= set(detailed)
    assert (detailed["array_id"], detailed["array_index"], detailed["exit_code"]) == (ids[0], 2, 512)
    assert set(fixture("oar25-job-5232.json")["events"][0]) == set(detailed["events"][0])
    listing = client.get("/jobs/details", params={"array": ids[0]}).json()
    documented = fixture("oar25-jobs-details.json")
    assert set(listing) == set(documented)
    assert set(documented["items"][0]) <= set(listing["items"][0])
    # as the real OAR 2.5.9 lists them: array_index null in the listing (GET jobs/<id> gives it)
    assert [item["array_index"] for item in listing["items"]] == [None, None]
    short = client.get("/jobs", params={"state": "Terminated"}).json()
    assert set(short["items"][0]) == set(fixture("oar25-jobs.json")["items"][0])
    assert client.get("/jobs/999").status_code == 404


def test_listings_are_paginated(client: httpx.Client, oar: OarState):
    oar.submit("cigritest", "/bin/run", params=[f"j{i}" for i in range(5)])
    first = client.get("/jobs/details", params={"array": 1}).json()
    assert (first["total"], first["offset"], [j["id"] for j in first["items"]]) == (5, 0, [1, 2])
    links = {link["rel"]: link["href"] for link in first["links"]}
    assert set(links) == {"self", "next"}
    second = client.get(links["next"]).json()
    assert ([j["id"] for j in second["items"]], second["offset"]) == ([3, 4], 2)
    assert {link["rel"] for link in second["links"]} == {"self", "next", "previous"}
    by_ids = client.get("/jobs/details", params={"ids": "1:3:5", "limit": 10}).json()
    assert [j["id"] for j in by_ids["items"]] == [1, 3, 5]


def test_queued_jobs_only_without_a_filter(client: httpx.Client, oar: OarState):
    oar.submit("cigritest", "/bin/run", params=["quick 1", "slow 100"])
    oar.advance(10)
    assert [j["id"] for j in client.get("/jobs/details").json()["items"]] == [2]
    assert [j["id"] for j in client.get("/jobs/details", params={"array": 1}).json()["items"]] == [1, 2]


def test_delete_answers_as_documented(client: httpx.Client, oar: OarState):
    first, second = oar.submit("cigritest", "/bin/run", params=["a 100", "b 100"])
    answer = client.delete(f"/jobs/{first}")
    assert set(answer.json()) == set(fixture("oar25-delete-job.json"))
    assert answer.json()["cmd_output"].startswith((FIXTURES / "oardel.txt").read_text().splitlines()[0][:18])
    assert client.post(f"/jobs/{second}/deletions/new").status_code == 200
    assert [event_types(j) for j in oar.jobs()] == [["FRAG_JOB_REQUEST"], ["FRAG_JOB_REQUEST"]]


def test_resources_full_media_and_stress(client: httpx.Client, api: OarServer, oar: OarState, tmp_path: Path):
    resources = client.get("/resources/full", params={"limit": 10}).json()
    documented = fixture("oar25-resources-full.json")
    assert set(resources) == set(documented) | {"api_timestamp"}
    assert set(documented["items"][0]) <= set(resources["items"][0])
    assert resources["total"] == 4
    [job_id] = oar.submit("cigritest", "/bin/run", directory=str(tmp_path), params=["x 1 1"])
    oar.advance(5)
    tail = client.get(f"/media{tmp_path}/OAR.{job_id}.stderr", params={"tail": 1})
    assert (tail.status_code, tail.text) == (200, "x exited with status 1\n")
    assert client.get("/media/nowhere/OAR.1.stderr").status_code == 404
    api.stress(0.9)
    assert client.get("/stress_factor").json()["GLOBAL_STRESS"] == "0.9"


def test_too_large_submissions_get_413(client: httpx.Client):
    answer = client.post("/jobs", json={"resource": "core=1", "command": "x", "param_file": "a\nb\nc\nd\ne\nf\n"})
    assert answer.status_code == 413


def test_injected_failures_and_hangs(client: httpx.Client, api: OarServer):
    api.fail_next(500, count=2)
    assert [client.get("/stress_factor").status_code for _ in range(3)] == [500, 500, 200]
    api.hang_next()
    with pytest.raises(httpx.TimeoutException):
        client.get("/stress_factor", timeout=0.3)
    assert client.get("/stress_factor").status_code == 200
    assert ("GET", "/stress_factor") in api.requests


# -- OAR 3 REST ---------------------------------------------------------------------------------------------------
def test_bearer_is_required(api3: OarServer):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
        with httpx.Client(base_url=api3.url, headers=headers, timeout=5) as c:
            answer = c.get("/jobs")
        assert answer.status_code == 401
        assert set(answer.json()) == set(fixture("oar3-error.json"))
        assert answer.headers["WWW-Authenticate"] == "Bearer"


def test_oar3_endpoints_answer_as_documented(client3: httpx.Client, oar: OarState, tmp_path: Path):
    posted = client3.post("/jobs", json={"resource": ["core=1"], "command": "x", "param_file": "a 1\nb 1 1\nc 100"})
    assert posted.json() == {"id": 1}
    assert set(posted.json()) == set(fixture("oar3-post-jobs.json"))
    oar.advance(5)
    listing = client3.get("/jobs", params={"details": 1, "array": 1}).json()
    assert set(fixture("oar3-jobs.json")) <= set(listing)
    assert [(j["array_index"], j["state"], j["exit_code"]) for j in listing["items"]] == [
        (1, "Terminated", 0),
        (2, "Terminated", 256),
        (3, "Running", None),
    ]
    assert listing["items"][0]["resources"][0]["status"] == "assigned"
    by_ids = client3.get("/jobs", params=[("details", "1"), ("job_ids", "1"), ("job_ids", "3")]).json()
    assert [j["id"] for j in by_ids["items"]] == [1, 3]
    assert client3.get("/jobs/2").json()["exit_code"] == 256
    deleted = client3.delete("/jobs/3").json()
    assert set(deleted) == set(fixture("oar3-delete-job.json"))
    assert event_types(oar.job(3)) == RUNNING_KILL  # it was running
    assert client3.get("/resources", params={"detailed": "true"}).json()["total"] == 4
    stress = client3.get("/stress_factor").json()
    assert set(stress) == set(fixture("oar3-stress-factor.json"))


def test_oar3_media(client3: httpx.Client, oar: OarState, tmp_path: Path):
    [job_id] = oar.submit("cigritest", "/bin/run", directory=str(tmp_path), params=["m 1 2"])
    oar.advance(5)
    path = f"{tmp_path}/OAR.{job_id}.stderr"
    assert client3.get("/media", params={"path_filename": path, "tail": 5}).text.startswith("stderr of m\n")


# -- the fake commands --------------------------------------------------------------------------------------------
def test_fake_commands_share_the_state(oar: OarState, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    commands = install_fake_commands(bin_dir, oar.path, python=sys.executable)
    params = tmp_path / "params.txt"
    params.write_text("a 5\nb 5 1\nc 5\nd 5\n")
    submitted = subprocess.run(
        [commands["oarsub"], "-l", "/nodes=1/core=1,walltime=00:05:00", "-t", "besteffort", "-n", "cigri.3",
         "--array-param-file", str(params), "-d", str(tmp_path), "/bin/job.sh"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    )  # fmt: skip
    documented = (FIXTURES / "oarsub-array.txt").read_text().splitlines()
    lines = submitted.stdout.splitlines()
    assert [line.split("=")[0] for line in lines] == [line.split("=")[0] for line in documented]
    assert lines == ["OAR_JOB_ID=1", "OAR_JOB_ID=2", "OAR_JOB_ID=3", "OAR_JOB_ID=4", "OAR_ARRAY_ID=1"]
    assert [(j["name"], j["types"], j["array_index"]) for j in oar.jobs()][3] == ("cigri.3", ["besteffort"], 4)
    oar.advance(3)
    stat = subprocess.run([commands["oarstat"], "-J", "-u", "--array", "1"], capture_output=True, text=True, check=True)
    jobs = json.loads(stat.stdout)
    assert list(jobs) == ["1", "2", "3", "4"]
    assert set(fixture("oarstat-J.json")["87132"]) <= set(jobs["1"])
    assert jobs["1"]["state"] == "Running"
    deleted = subprocess.run([commands["oardel"], "2"], capture_output=True, text=True, check=True)
    assert deleted.stdout == (FIXTURES / "oardel.txt").read_text().replace("554", "2")
    assert oar.job(2)["state"] == "Error"


def test_fake_commands_in_process(oar: OarState, tmp_path: Path, capsys):
    assert main(["oarsub", "--state", str(oar.path), "-l", "core=1", "/bin/one", "arg"]) == 0
    assert capsys.readouterr().out == "OAR_JOB_ID=1\n"
    assert oar.job(1)["command"] == "/bin/one arg"
    assert main(["oarstat", "--state", str(oar.path), "-J", "-j", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["1"]["state"] == "Waiting"
    assert main(["oarstat", "--state", str(oar.path)]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[0] == "1"
    assert main(["oardel", "--state", str(oar.path), "7"]) == 1
    assert "Job 7 not found" in capsys.readouterr().err
    assert main(["oarsub", "--state", str(oar.path), "-l", "core=99", "x"]) == 1
    assert "not enough resources" in capsys.readouterr().err


# -- holds and resumptions ----------------------------------------------------------------------------------------
def test_a_held_job_is_not_scheduled_until_resumed_and_other_states_are_refused(oar: OarState):
    running, held = oar.submit("alice", "/bin/run", "core=4,walltime=00:01:00", params=["a 5", "b 5"])
    oar.advance(0)
    assert oar.hold(held) == f"[{held}] Hold request was sent to the OAR server."
    with pytest.raises(OarError, match="the job is Launching, not Waiting"):
        oar.hold(running)
    with pytest.raises(OarError, match="the job is Hold, not Waiting"):
        oar.hold(held)
    oar.advance(60)  # the running job ends: the held one still waits
    assert states(oar) == {running: "Terminated", held: "Hold"}
    assert oar.resume(held) == f"[{held}] Resume request was sent to the OAR server."
    with pytest.raises(OarError, match="the job is Waiting, not Hold"):
        oar.resume(held)
    oar.advance(0)
    assert states(oar)[held] == "Launching"


def test_holds_and_resumptions_through_both_apis_and_the_commands(oar, api, client, client3):
    ids = oar.submit("cigritest", "/bin/run", "core=1", params=["a", "b", "c"])
    answer = client.post(f"/jobs/{ids[0]}/holds/new").json()
    assert (answer["status"], answer["cmd_output"]) == (
        "Hold request registered",
        f"[{ids[0]}] Hold request was sent to the OAR server.",
    )
    refused = client.post(f"/jobs/{ids[0]}/holds/new")  # as OAR 2.5.9's oarapi refuses: 400, "Oar error"
    assert (refused.status_code, refused.json()["title"]) == (400, "Oar error")
    assert "Oar command exited with status 256" in refused.json()["message"]
    assert client.post(f"/jobs/{ids[0]}", json={"method": "resume"}).json()["status"] == "Resume request registered"
    assert client3.post(f"/jobs/{ids[1]}/hold/new").json()["exit_status"] == 0
    assert client3.post(f"/jobs/{ids[1]}/hold/new").json()["exit_status"] == 1  # HTTP 200 all the same
    assert client3.post(f"/jobs/{ids[1]}/resumptions/new").json()["exit_status"] == 0
    assert main(["oarhold", "--state", str(oar.path), str(ids[2]), "99"]) == 1  # 99 is unknown: the others held
    assert states(oar) == {ids[0]: "Waiting", ids[1]: "Waiting", ids[2]: "Hold"}
    assert main(["oarresume", "--state", str(oar.path), str(ids[2])]) == 0
    assert states(oar)[ids[2]] == "Waiting"
