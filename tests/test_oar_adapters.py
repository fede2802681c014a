"""The oar-rest and oar-ssh adapters: the shared translation and quoting, error mapping against
httpx.MockTransport and a fake CommandRunner, then the contract OAR of tests/oar (its REST API in both
flavours, and its fake oarsub/oarstat/oardel run through the local transport), up to whole campaigns."""

from __future__ import annotations

import json
import re
import shlex
import string
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cigri.adapters import AdapterContext, adapter_class, validate_config
from cigri.adapters.oar import (
    array_command,
    exit_status,
    job_of,
    job_wrapper,
    kill_cause,
    param_line,
    resubmitted_as,
    translate,
)
from cigri.adapters.oar_rest import OarRest, oarapi_word
from cigri.adapters.oar_ssh import OarSsh
from cigri.adapters.transport import LocalRunner, Result
from cigri.clock import RealClock
from cigri.errors import AdapterError, ConfigError, JdlError, SubmitError, TransportError
from cigri.model import Cluster, JobSpec, KillCause, RemoteState
from tests.oar.contract import OarState, unwrapped
from tests.oar.fake_commands import execute, install_fake_commands
from tests.oar.server import OarServer, through_oarapi

from .conftest import write_jdl

TOKEN = "oar3.secret-token.XYZ"  # must never show in a message
NASTY = ["a b; echo hacked", "$(touch pwned)", "`id`", "it's", '"quoted" \\ *', "-n", "", "~", "x*"]
LOGIN = "cigritest"
CHECKPOINT = {"checkpoint_signal": "USR2", "checkpoint_grace": 300}  # a JDL's checkpointing_type: signal


def spec(i: int, *params: str, directory: str = "~", best_effort: bool = False, **fields) -> JobSpec:
    return JobSpec(
        job_id=i,
        campaign_id=7,
        name=params[0] if params else f"j{i}",
        argv=("~/bin/run", *params),
        directory=directory,
        walltime=fields.pop("walltime", 600),
        best_effort=best_effort,
        user="alice",
        **fields,
    )


def record(job_id: int, state: str, exit_code: int | None = None, *events: str, **fields) -> dict:
    """A job as OAR's API lists it."""
    described = [{"type": e.split(":", 1)[0], "description": e.partition(":")[2]} for e in events]
    return {"id": job_id, "state": state, "exit_code": exit_code, "events": described, **fields}


# ---- what both adapters share -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "exit_code", "events", "expected"),
    [
        ("Waiting", None, [], (RemoteState.PENDING, None)),
        ("Hold", None, [], (RemoteState.PENDING, None)),
        # cores given, being started: deleting it then races with its start (the real 2.5.9 ran such jobs to
        # their end after oardel), so it is no queued job to kill for flooding
        ("toLaunch", None, [], (RemoteState.RUNNING, None)),
        ("Launching", None, [], (RemoteState.RUNNING, None)),
        ("toAckReservation", None, [], (RemoteState.PENDING, None)),
        ("Running", None, [], (RemoteState.RUNNING, None)),
        ("Finishing", None, [], (RemoteState.RUNNING, None)),
        ("Suspended", None, [], (RemoteState.RUNNING, None)),
        ("Resuming", None, [], (RemoteState.RUNNING, None)),
        ("Terminated", 0, [], (RemoteState.EXITED, 0)),
        ("Terminated", 3 << 8, [], (RemoteState.EXITED, 3)),
        ("Terminated", 9, [], (RemoteState.EXITED, 137)),  # killed by SIGKILL: as a shell says it
        ("Error", None, ["BESTEFFORT_KILL"], (RemoteState.KILLED, None)),
        ("Error", None, ["WALLTIME"], (RemoteState.KILLED, None)),
        ("Error", None, ["EXTERMINATE_JOB"], (RemoteState.KILLED, None)),
        ("Error", None, ["FRAG_JOB_REQUEST"], (RemoteState.KILLED, None)),
        ("Error", None, ["WORKING_DIRECTORY:Bad job working directory: /nope"], (RemoteState.EXITED, None)),
        (
            "Error",
            None,
            ["OUTPUT_FILES:[bipbip 9] Cannot create .stdout and .stderr files in /w"],
            (RemoteState.EXITED, None),
        ),
        ("Error", 2 << 8, ["SOMETHING_ELSE"], (RemoteState.EXITED, 2)),
        ("Error", None, ["SOMETHING_ELSE"], (RemoteState.EXITED, None)),
        ("Strange", None, [], (RemoteState.UNKNOWN, None)),
    ],
)
def test_the_state_and_event_table(state, exit_code, events, expected):
    remote, code, reason = translate(job_of(record(5, state, exit_code, *events)))
    assert (remote, code) == expected
    if remote == RemoteState.EXITED and code is None:
        assert reason  # an event the user can read, never a silent success
    if events and events[0].startswith("WORKING_DIRECTORY"):
        assert reason == "working directory problem: Bad job working directory: /nope"
    if events and events[0].startswith("OUTPUT_FILES"):  # the real OAR's words when the folder is not writable
        assert reason == "output files problem: [bipbip 9] Cannot create .stdout and .stderr files in /w"


@pytest.mark.parametrize(
    ("events", "cause", "said"),
    [
        (["BESTEFFORT_KILL"], KillCause.PREEMPTED, "BESTEFFORT_KILL"),
        (["WALLTIME"], KillCause.WALLTIME, "WALLTIME"),
        (["EXTERMINATE_JOB"], KillCause.ADMIN, "EXTERMINATE_JOB"),
        (["FRAG_JOB_REQUEST"], KillCause.ADMIN, "FRAG_JOB_REQUEST"),
        (["SWITCH_INTO_TERMINATE_STATE", "BESTEFFORT_KILL"], KillCause.PREEMPTED, "BESTEFFORT_KILL"),
        # as the real OAR 2.5.9 records them: FRAG_JOB_REQUEST comes with every kill, before or after its cause
        (["FRAG_JOB_REQUEST", "WALLTIME", "SEND_KILL_JOB", "SWITCH_INTO_ERROR_STATE"], KillCause.WALLTIME, "WALLTIME"),
        (
            [
                *("SCHEDULER_PRIORITY_UPDATED_START", "BESTEFFORT_KILL", "FRAG_JOB_REQUEST", "SEND_KILL_JOB"),
                *("SWITCH_INTO_ERROR_STATE", "SCHEDULER_PRIORITY_UPDATED_STOP"),
            ],
            KillCause.PREEMPTED,
            "BESTEFFORT_KILL",
        ),
        (["FRAG_JOB_REQUEST", "SEND_KILL_JOB", "SWITCH_INTO_ERROR_STATE"], KillCause.ADMIN, "FRAG_JOB_REQUEST"),
        (["SOMETHING_ELSE"], None, None),  # not a kill: an error for the user
    ],
)
def test_why_oar_killed_a_job(events, cause, said):
    job = job_of(record(5, "Error", None, *events))
    assert kill_cause(job) == cause
    if said:  # the reason names the event that says why
        assert translate(job)[2] == f"killed by OAR ({said})"


@given(
    state=st.sampled_from(["Error", "Terminated", "Running", "Odd"]),
    kinds=st.lists(st.text(string.ascii_uppercase + "_:", max_size=20), max_size=4),
)
def test_any_events_give_a_cause_exactly_when_oar_killed_the_job(state, kinds):
    job = job_of(record(5, state, None, *kinds))
    cause = kill_cause(job)
    assert (cause is not None) == (translate(job)[0] == RemoteState.KILLED)
    assert cause is None or isinstance(cause, KillCause)


def test_exit_status_reads_wait_statuses():
    assert [exit_status(raw) for raw in (0, 256, 66 << 8, 15, None, -1)] == [0, 1, 66, 143, None, None]


def test_a_resubmitted_job_names_its_new_id():
    job = job_of(
        record(12, "Error", None, "RESUBMIT_JOB_AUTOMATICALLY:The job 12 was automatically resubmitted (new id = 40)")
    )
    assert resubmitted_as(job) == "40"
    assert resubmitted_as(job_of(record(12, "Error", None, "WALLTIME:job 12"))) is None


SHELL_TEXT = st.text(st.sampled_from("ab /~\\\"'$`(){};*!&|<>\n\t%é"), max_size=30).filter(
    lambda text: not text.endswith("\\")
)


@settings(max_examples=60)  # each example runs the shells of oarapi's command line
@given(text=SHELL_TEXT, option=SHELL_TEXT)
def test_values_reach_oarsub_unchanged_through_the_shells_of_oar_25s_api(text, option, tmp_path_factory):
    home = str(tmp_path_factory.getbasetemp() / "home")
    sent = {"command": oarapi_word(text), "project": oarapi_word(option), "directory": oarapi_word("$HOME/x", "$HOME")}
    assert through_oarapi(sent, home) == {"command": text, "project": option, "directory": f"{home}/x"}


def test_a_value_ending_with_a_backslash_cannot_go_through_oar_25s_api():
    with pytest.raises(SubmitError, match="ending with a backslash"):
        oarapi_word("a\\")


def test_param_lines_give_back_the_exact_words():
    words = ["n1", *NASTY]
    line = param_line(spec(1, *words))
    assert shlex.split(line) == ["1", "n1", *words] and "\n" not in line  # the job's id and name lead
    with pytest.raises(SubmitError, match="line break"):
        param_line(spec(2, "n2", "two\nlines"))


def test_a_batch_is_an_array_job_and_a_single_job_carries_its_words():
    command, params = array_command([spec(1, "a", "1"), spec(2, "a1", "x y")], "/home/alice")
    assert command == f"{job_wrapper(spec(1))} /home/alice/bin/run" and params == "1 a a 1\n2 a1 a1 'x y'\n"
    command, params = array_command([spec(1, "pro", "multi\nline")], "$HOME")
    assert params is None and command == f"{job_wrapper(spec(1))} \"$HOME\"/bin/run 1 pro pro 'multi\nline'"


def test_both_adapters_are_registered_with_their_options():
    assert adapter_class("oar-rest") is OarRest and adapter_class("oar-ssh") is OarSsh
    assert validate_config("oar-rest", {"max_batch": "50", "api_flavour": "3"}) == {"max_batch": 50, "api_flavour": "3"}
    with pytest.raises(ConfigError, match="has no option 'partition'"):
        validate_config("oar-ssh", {"partition": "x"})


# ---- oar-rest without OAR: httpx.MockTransport ---------------------------------------------------------


def mocked(tmp_path: Path, handler, **config) -> OarRest:
    settings = {"url": "https://oar.example/oarapi", "login": LOGIN, **config}
    cluster = Cluster("oar", "oar-rest", settings)
    return OarRest(cluster, AdapterContext(tmp_path, RealClock()), transport=httpx.MockTransport(handler))


def refusal(adapter: OarRest, call, error: type[Exception]) -> str:
    with pytest.raises(error) as caught:
        call(adapter)
    adapter.close()
    message = str(caught.value)
    assert TOKEN not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "cannot reach OAR's API at https://oar.example/oarapi"),
        (httpx.ReadTimeout("timed out"), "gave no answer within 5 s"),
    ],
)
def test_an_unreachable_api_is_a_transport_error(tmp_path, exc, words):
    def handler(request):
        raise exc

    message = refusal(mocked(tmp_path, handler, timeout=5), OarRest.capacity, TransportError)
    assert message.startswith("oar:") and words in message


def test_http_401_is_an_authentication_failure_without_the_token(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    adapter = mocked(
        tmp_path,
        lambda request: httpx.Response(401, json={"detail": f"bad token {TOKEN}"}),
        auth="bearer",
        token_file=str(token_file),
    )
    message = refusal(adapter, OarRest.capacity, TransportError)
    assert "refused the authentication of cigritest (HTTP 401)" in message


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_transport_errors(tmp_path, status):
    answer = httpx.Response(status, json={"title": "ERROR", "message": "database is down", "code": status})
    message = refusal(mocked(tmp_path, lambda request: answer), OarRest.capacity, TransportError)
    assert f"HTTP {status} to GET stress_factor: database is down" in message


def test_a_too_large_batch_says_to_lower_max_batch(tmp_path):
    adapter = mocked(tmp_path, lambda request: httpx.Response(413, text="Request Entity Too Large"), max_batch=800)
    message = refusal(adapter, lambda a: a.submit("cigri.x.1.b.1", [spec(1, "a"), spec(2, "b")]), SubmitError)
    assert "too large" in message and "lower max_batch (now 800)" in message


def test_a_refused_submission_is_a_submit_error_with_oars_words(tmp_path):
    answer = httpx.Response(400, json={"code": 400, "message": "Bad property: nope = 'x'", "title": "ERROR 400"})
    message = refusal(mocked(tmp_path, lambda request: answer), lambda a: a.submit("k", [spec(1, "a")]), SubmitError)
    assert message == "oar refused the batch (HTTP 400): Bad property: nope = 'x'"


def test_a_bad_configuration_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="needs the url option"):
        OarRest(Cluster("oar", "oar-rest", {}), AdapterContext(tmp_path, RealClock())).capacity()
    with pytest.raises(ConfigError, match=r"api_flavour must be one of 2\.5, 3"):
        mocked(tmp_path, lambda request: None, api_flavour="4").capacity()
    with pytest.raises(ConfigError, match="holds no token"):
        (tmp_path / "empty").write_text("\n")
        mocked(tmp_path, lambda request: None, auth="bearer", token_file=str(tmp_path / "empty")).capacity()


def test_submission_fields_and_mapping_by_array_index(tmp_path):
    """OAR lists an array's jobs in any order and with any ids: only array_index maps them to specs."""
    sent = []

    def handler(request):
        if request.method == "POST":
            sent.append(json.loads(request.content))
            return httpx.Response(201, json={"id": 100, "cmd_output": "OAR_JOB_ID=100\n"})
        assert request.url.path == "/oarapi/jobs/details" and request.url.params["array"] == "100"
        items = [
            record(131, "Waiting", array_id=100, array_index=3),
            record(100, "Waiting", array_id=100, array_index=1),
            record(117, "Waiting", array_id=100, array_index=2),
        ]
        return httpx.Response(200, json={"items": items, "total": 3, "offset": 0})

    adapter = mocked(tmp_path, handler)
    specs = [
        spec(1, "job1", directory="~/out", best_effort=True, properties="host != 'n3'", project="p1", **CHECKPOINT),
        spec(2, "job10", **CHECKPOINT),
        spec(3, "job1", "0"),
    ]
    assert adapter.submit("cigri.x.7.b.1", specs) == ["100", "117", "131"]
    (payload,) = sent
    # OAR 2.5's API hands the values to a shell (the directory's $HOME is its to expand): what oarsub gets
    assert through_oarapi(payload, "/home/alice") == {
        "resource": "/resource_id=1,walltime=00:10:00",
        "command": f'{job_wrapper(specs[0])} "$HOME"/bin/run',
        "param_file": "1 job1 job1\n2 job10 job10\n3 job1 job1 0\n",
        "name": "cigri.x.7.b.1",
        "directory": "/home/alice/out",
        "property": "host != 'n3'",
        "project": "p1",
        "type": ["besteffort"],
        "checkpoint": 300,  # oarsub --checkpoint: seconds before the walltime
        "signal": 12,  # oarsub --signal: SIGUSR2, by its number
    }


def test_find_batch_reads_the_short_listing_of_the_logins_jobs_then_one_arrays_details(tmp_path):
    """OAR 2.5.9's detailed listing costs ~30 ms a job (13 s for the 460 jobs of a test user's history here, past
    a pass's kill point and near the 20-s timeout): the login's history is read in the short listing (0.3 s)."""
    asked = []

    def handler(request):
        asked.append((request.url.path, dict(request.url.params)))
        if request.url.path == "/oarapi/jobs":
            items = [{"id": 7, "name": "other", "state": "Terminated"}]
            items += [{"id": i, "name": "cigri.x.7.b.1", "state": "Terminated"} for i in (41, 40, 57)]
            return httpx.Response(200, json={"items": items, "total": 4, "offset": 0})
        assert request.url.path == "/oarapi/jobs/details" and request.url.params["array"] == "40"
        items = [record(i, "Terminated", 0, array_id=40, array_index=None, name="cigri.x.7.b.1") for i in (40, 41)]
        return httpx.Response(200, json={"items": items, "total": 2, "offset": 0})

    assert mocked(tmp_path, handler).find_batch("cigri.x.7.b.1") == ["40", "41"]  # the first submission's
    assert [path for path, _ in asked] == ["/oarapi/jobs", "/oarapi/jobs/details"]
    assert asked[0][1]["user"] == LOGIN and "Terminated" in asked[0][1]["state"]


def test_an_array_oar_does_not_fully_list_yet_is_found_next_pass(tmp_path):
    def handler(request):
        if request.method == "POST":
            return httpx.Response(201, json={"id": 100})
        return httpx.Response(200, json={"items": [record(100, "Waiting", array_id=100, array_index=1)], "total": 1})

    message = refusal(mocked(tmp_path, handler), lambda a: a.submit("k", [spec(1, "a"), spec(2, "b")]), TransportError)
    assert "does not list every job of array 100" in message


def test_error_jobs_listed_without_events_are_asked_for_them(tmp_path):
    asked = []

    def handler(request):
        asked.append(request.url.path)
        if request.url.path == "/oarapi/jobs/details":
            listed = {key: value for key, value in record(8, "Error", None).items() if key != "events"}
            return httpx.Response(200, json={"items": [listed], "total": 1})
        return httpx.Response(200, json=record(8, "Error", None, "WALLTIME:reached its walltime"))

    items = mocked(tmp_path, handler).states(["8"])
    assert items["8"].state == RemoteState.KILLED and asked[-1] == "/oarapi/jobs/8"


def test_cancel_and_tail_forgive_what_oar_refuses_but_not_an_outage(tmp_path):
    def handler(request):
        if request.url.path.endswith("/jobs/5"):
            return httpx.Response(400, json={"message": "This job was already killed or is already terminated"})
        return httpx.Response(503, json={"message": "down"})

    adapter = mocked(tmp_path, handler)
    adapter.cancel(["5"])
    assert adapter.tail("5", "stderr", 5) == ""
    assert "HTTP 503" in refusal(adapter, lambda a: a.cancel(["6"]), TransportError)


# ---- oar-rest against the contract OAR ----------------------------------------------------------------


class Contract:
    """The contract cluster's state, its servers and the adapters on them (all closed afterwards)."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.state = OarState(tmp_path / "oar" / "state.json", cores=4)
        self.servers: list[OarServer] = []
        self.adapters: list[OarRest] = []

    def serve(self, **options) -> OarServer:
        server = OarServer(self.state.path, **options)
        server.start()
        self.servers.append(server)
        return server

    def rest(self, server: OarServer, **config) -> OarRest:
        settings = {"url": server.url, "api_flavour": server.flavour, "login": LOGIN, **config}
        adapter = OarRest(Cluster("oar", "oar-rest", settings), AdapterContext(self.tmp_path, RealClock()))
        self.adapters.append(adapter)
        return adapter

    def close(self) -> None:
        for adapter in self.adapters:
            adapter.close()
        for server in self.servers:
            server.stop()


@pytest.fixture
def oar(tmp_path):
    contract = Contract(tmp_path)
    yield contract
    contract.close()


@pytest.mark.parametrize("flavour", ["2.5", "3"])
def test_a_batch_runs_and_maps_exactly_where_params_prefix_each_other(oar, tmp_path, flavour):
    state = oar.state
    server = oar.serve(flavour=flavour, page_size=2)
    adapter = oar.rest(server, page_size=3)
    names = ["a", "a1", "job1", "job10", "job100"]
    specs = [spec(i, name, "5", str(i % 2 * 3), directory=str(tmp_path)) for i, name in enumerate(names, start=1)]
    ids = adapter.submit("cigri.x.7.b.1", specs)
    assert adapter.find_batch("cigri.x.7.b.1") == ids and adapter.find_batch("cigri.x.7.b.2") is None
    by_id = {str(job["id"]): job for job in state.jobs()}
    assert [by_id[i]["params"].split()[0] for i in ids] == names
    assert [by_id[i]["array_index"] for i in ids] == [1, 2, 3, 4, 5]
    state.advance(0)
    assert adapter.capacity() == adapter.capacity().__class__(total=4, used=4, grid_used=4, queued=1)
    before = len(server.requests)
    adapter.states(ids)
    running = server.requests[before:]
    # while they run: the login's current jobs, one paginated listing (pages of 3), nothing asked job by job
    assert len(running) == 2 and all("user=" in path for _, path in running)
    state.advance(60)
    before = len(server.requests)
    statuses = adapter.states(ids)
    pages = server.requests[before:]
    # all ended: the listing (now empty, one page), then the ended ones by id, in pages of 3
    assert all("details" in path for _, path in pages) and len(pages) == 3 and "user=" in pages[0][1]
    assert [(s.state, s.exit_code) for s in statuses.values()] == [
        (RemoteState.EXITED, 3),
        (RemoteState.EXITED, 0),
        (RemoteState.EXITED, 3),
        (RemoteState.EXITED, 0),
        (RemoteState.EXITED, 3),
    ]
    assert statuses[ids[0]].started_at and statuses[ids[0]].ended_at
    assert adapter.tail(ids[0], "stderr", 1) == "a exited with status 3"
    assert adapter.states(["999"])["999"].state == RemoteState.UNKNOWN
    adapter.close()


@pytest.mark.parametrize("flavour", ["2.5", "3"])
def test_rest_jobs_get_their_environment_from_a_file_private_before_it_holds_anything(oar, tmp_path, flavour):
    home = Path(oar.state.home(LOGIN))
    (home / ".cigri").mkdir(parents=True)  # OAR 3's API makes no folder: cigri's is there already
    server = oar.serve(flavour=flavour)
    adapter = oar.rest(server, **({"home": str(home)} if flavour == "3" else {}))  # OAR 3 takes absolute paths only
    work = tmp_path / "work"
    work.mkdir()
    dump = dump_environment(work)
    specs = [
        replace(spec(i, n, directory=str(work), env=SECRET_ENV), argv=(str(dump), n)) for i, n in ((1, "a"), (2, "b"))
    ]
    ids = adapter.submit("cigri.x.7.b.1", specs)
    jobs = {str(job["id"]): job for job in oar.state.jobs()}
    assert not shows_a_secret(json.dumps(list(jobs.values())))  # command, initial request: what oarstat shows all
    assert not shows_a_secret(" ".join(path for _, path in server.requests))
    env_file = f"{home}/.cigri/cigri.x.7.b.1.env"
    media = oar.state.snapshot()["media"]
    assert shlex.split(media["files"][env_file]) == [w for k, v in SECRET_ENV.items() for w in ("export", f"{k}={v}")]
    assert media["modes"][env_file] == "600"
    assert [mode for path, mode, size in media["writes"] if path == env_file and size] == ["600"]  # never readable
    for job_id, name in zip(ids, ("a", "b"), strict=True):
        assert execute(jobs[job_id], home=str(home)).returncode == 0
        got = environment_of(work, name)
        assert {k: got[k] for k in SECRET_ENV} == SECRET_ENV and got["CIGRI_JOB_NAME"] == name
    assert not (work / "pwned").exists()


def test_on_oar3_an_environment_needs_the_home_and_cigris_folder(oar, tmp_path):
    server = oar.serve(flavour="3")
    adapter = oar.rest(server)
    settings = {"resources": "/resource_id=1", "environment": {"A": "b"}}
    with pytest.raises(JdlError, match=r"clusters\.oar\.environment: .*home option"):
        adapter.check(settings, "clusters.oar")
    adapter.check({**settings, "environment": {}}, "clusters.oar")
    assert "home option" in refusal(adapter, lambda a: a.submit("k", [spec(1, "a", env={"A": "b"})]), SubmitError)
    home = tmp_path / "h"
    home.mkdir()
    message = refusal(
        oar.rest(server, home=str(home)), lambda a: a.submit("k", [spec(1, "a", env={"A": "b"})]), SubmitError
    )
    assert (
        f"cannot stage the jobs' environment in {home}/.cigri/k.env" in message and "does its folder exist" in message
    )
    assert not oar.state.jobs()


def test_oar_kills_are_resubmitted_and_the_workdir_error_is_the_users(oar, tmp_path):
    state = oar.state
    adapter = oar.rest(oar.serve())
    normal = adapter.submit(
        "cigri.x.7.b.1",
        [
            spec(1, "walltime", "900", walltime=60, directory=str(tmp_path)),
            spec(2, "deleted", "50", directory=str(tmp_path)),
        ],
    )
    # batches of two: OAR takes no array of one param line, and the contract runs a plain job 1 s
    best = adapter.submit(
        "cigri.x.7.b.2",
        [spec(3, "preempted", "50", best_effort=True, directory=str(tmp_path)), spec(5, "ok", directory=str(tmp_path))],
    )
    lost = adapter.submit("cigri.x.7.b.3", [spec(4, "lost", directory=str(tmp_path / "missing"))])
    state.advance(2)
    state.besteffort_kill(int(best[0]))
    best = best[:1]
    adapter.cancel([normal[1]])
    state.advance(120)
    got = adapter.states([*normal, *best, *lost])
    assert [got[i].state for i in (*normal, *best)] == [RemoteState.KILLED] * 3
    assert "WALLTIME" in got[normal[0]].reason and "BESTEFFORT_KILL" in got[best[0]].reason
    assert "FRAG_JOB_REQUEST" in got[normal[1]].reason
    assert [got[i].cause for i in (*normal, *best, *lost)] == [
        KillCause.WALLTIME,
        KillCause.ADMIN,
        KillCause.PREEMPTED,
        None,
    ]
    assert got[lost[0]].state == RemoteState.EXITED and got[lost[0]].exit_code is None
    assert got[lost[0]].reason.startswith("working directory problem: Bad job working directory")
    adapter.cancel(normal)  # already over: nothing to refuse
    adapter.close()


def test_a_job_oar_resubmits_is_followed_under_its_old_id(oar, tmp_path):
    state = oar.state
    adapter = oar.rest(oar.serve(flavour="3"))
    old, _ = adapter.submit(
        "cigri.x.7.b.1",
        [spec(1, "moved", "30", "4", directory=str(tmp_path)), spec(2, "other", directory=str(tmp_path))],
    )
    state.advance(2)
    new = str(state.resubmit_automatically(int(old)))
    status = adapter.states([old])[old]
    assert status.state == RemoteState.PENDING and status.reason == f"resubmitted by OAR as job {new}"
    state.advance(5)
    assert adapter.states([old])[old].state == RemoteState.RUNNING
    state.advance(60)
    status = adapter.states([old])[old]
    assert (status.state, status.exit_code) == (RemoteState.EXITED, 4)
    assert "moved exited with status 4" in adapter.tail(old, "stderr", 5)


def test_a_stressed_cluster_gets_no_new_jobs_but_is_still_polled(oar, tmp_path):
    server = oar.serve()
    adapter = oar.rest(server, queue_depth=10)
    ids = adapter.submit("cigri.x.7.b.1", [spec(1, "a", "50"), spec(2, "b", "50")])
    server.stress(0.85)
    capacity = adapter.capacity()
    assert capacity.free == 0 and adapter.queue_depth == 0
    assert adapter.stressed  # the flow's reading: the cluster's queue is stalled
    assert set(adapter.states(ids)) == set(ids)
    server.stress(0.2)
    assert adapter.capacity().free == 4 and adapter.queue_depth == 10
    assert not adapter.stressed


def test_faults_of_the_contract_api_map_to_transport_and_submit_errors(oar, tmp_path):
    server = oar.serve(hang_seconds=3, max_param_lines=3)
    adapter = oar.rest(server, timeout=1)
    server.fail_next(503)
    assert "HTTP 503" in refusal(adapter, OarRest.capacity, TransportError)
    server.hang_next()
    assert "no answer within 1 s" in refusal(adapter, OarRest.capacity, TransportError)
    four = [spec(i, f"j{i}") for i in range(1, 5)]
    assert "lower max_batch" in refusal(adapter, lambda a: a.submit("k", four), SubmitError)
    silent = OarRest(
        Cluster("oar", "oar-rest", {"url": server.url, "ident_header": "X_OTHER", "login": LOGIN}),
        AdapterContext(tmp_path, RealClock()),
    )
    assert "HTTP 401" in refusal(silent, OarRest.capacity, TransportError)
    stopped = oar.rest(server)
    server.stop()
    assert "cannot reach OAR's API" in refusal(stopped, OarRest.capacity, TransportError)


def test_bearer_tokens_and_a_custom_ident_header(oar, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    server = oar.serve(flavour="3", auth="bearer", token=TOKEN)
    adapter = oar.rest(server, auth="bearer", token_file=str(token_file))
    assert adapter.capacity().total == 4
    token_file.write_text("wrong-token\n")
    assert "HTTP 401" in refusal(
        oar.rest(server, auth="bearer", token_file=str(token_file)), OarRest.capacity, TransportError
    )
    custom = oar.serve(ident_header="X-Remote-User")
    assert oar.rest(custom, ident_header="X-Remote-User").capacity().total == 4


# ---- oar-ssh: a fake CommandRunner, then the contract's commands run locally -----------------------------


class FakeRunner:
    """Answers by the command's name, in its argv or in the script it reads on stdin; records every argv
    (and stdin)."""

    where = "fake"

    def __init__(self, answers: dict[str, Result | str]):
        self.answers = answers
        self.calls: list[tuple[tuple[str, ...], str | None]] = []

    def run(self, argv, *, input=None, timeout=None) -> Result:
        argv = tuple(argv)
        self.calls.append((argv, input))
        key = next((k for k in self.answers if k in " ".join(argv) + (input or "")), None)
        answer = self.answers.get(key, "") if key else ""
        return answer if isinstance(answer, Result) else Result(argv, 0, answer, "")

    def close(self) -> None:
        pass


def ssh_adapter(tmp_path: Path, runner, **config) -> OarSsh:
    cluster = Cluster("front", "oar-ssh", {"slots": 4, **config})
    return OarSsh(cluster, AdapterContext(tmp_path, RealClock()), runner=runner)


def staged(script: str) -> tuple[str, dict[str, str]]:
    """A submission script read on stdin: its command line, and the files its here-documents write."""
    command, *lines = script.split("\n")
    files = {}
    for path, end in re.findall(r"cat > (\S+) <<'(\w+)'", command):
        body, lines = lines[: lines.index(end)], lines[lines.index(end) + 1 :]
        files[shlex.split(path)[0]] = "".join(f"{line}\n" for line in body)
    return command, files


def test_ssh_submission_stages_the_param_file_and_maps_by_index(tmp_path):
    oarstat = {str(i): record(i, "Waiting", array_id=20, array_index=i - 19, name="k") for i in (20, 21)}
    runner = FakeRunner(
        {
            'printf %s "$HOME"': "/home/alice",
            "oarsub": "[ADMISSION RULE] ok\nOAR_JOB_ID=20\nOAR_JOB_ID=21\nOAR_ARRAY_ID=20\n",
            "oarstat": json.dumps(oarstat),
        }
    )
    adapter = ssh_adapter(tmp_path, runner, bin_dir="/opt/oar/bin")
    specs = [spec(1, "a", *NASTY, best_effort=True, project="p", **CHECKPOINT), spec(2, "a1", **CHECKPOINT)]
    assert adapter.submit("cigri.x.7.b.1", specs) == ["20", "21"]
    (argv, script) = next((argv, stdin) for argv, stdin in runner.calls if stdin and "oarsub" in stdin)
    assert argv == ("sh", "-s")  # the script, its param file included, comes on stdin
    command, files = staged(script)
    params = files["/home/alice/.cigri/cigri.x.7.b.1.params"]
    assert [shlex.split(line) for line in params.splitlines()] == [["1", "a", "a", *NASTY], ["2", "a1", "a1"]]
    [step] = [step for step in command.split(" && ") if step.startswith("/opt/oar/bin/oarsub ")]
    oarsub = shlex.split(step.split(" > ")[0])
    assert oarsub == [
        "/opt/oar/bin/oarsub",
        "-l",
        "/resource_id=1,walltime=00:10:00",
        "-n",
        "cigri.x.7.b.1",
        "-d",
        "/home/alice",
        "--project",
        "p",
        "-t",
        "besteffort",
        "--checkpoint",
        "300",
        "--signal",
        "12",
        "--array-param-file",
        "/home/alice/.cigri/cigri.x.7.b.1.params",
        f"{job_wrapper(specs[0])} /home/alice/bin/run",
    ]


SECRET_ENV = {"DB_PASS": "hunter2 'pass'", "SENTRY_DSN": "https://k3y@sentry.example/1", "ODD": "$(touch pwned) `id`"}


def shows_a_secret(text: str) -> bool:
    return any(value in text or shlex.quote(value) in text for value in SECRET_ENV.values())


def test_ssh_submission_sends_the_jobs_environment_on_stdin_in_a_private_file_never_in_argv(tmp_path):
    runner = FakeRunner({'printf %s "$HOME"': "/home/alice", "oarsub": "OAR_JOB_ID=20\nOAR_JOB_ID=21\n"})
    specs = [spec(1, "a", env=SECRET_ENV), spec(2, "b", env=SECRET_ENV)]
    assert ssh_adapter(tmp_path, runner).submit("cigri.x.7.b.1", specs) == ["20", "21"]
    assert not any(shows_a_secret(" ".join(argv)) for argv, _ in runner.calls)
    script = next(stdin for _, stdin in runner.calls if stdin and "oarsub" in stdin)
    command, files = staged(script)
    assert command.startswith("umask 077 && ")  # what it writes is the user's alone
    env_file = "/home/alice/.cigri/cigri.x.7.b.1.env"
    assert shlex.split(files[env_file]) == [w for k, v in SECRET_ENV.items() for w in ("export", f"{k}={v}")]
    assert not shows_a_secret(command)  # the job's command (oarsub's argument) sources the file instead
    assert f". {env_file}" in command


def dump_environment(folder: Path) -> Path:
    script = folder / "dump.sh"
    script.write_text(f'#!/bin/sh\nenv -0 > "{folder}/env.$1"\n')
    script.chmod(0o755)
    return script


def environment_of(folder: Path, name: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in (folder / f"env.{name}").read_text().split("\0") if item)


def test_ssh_failures_map_to_transport_and_submit_errors(tmp_path):
    home = {'printf %s "$HOME"': "/home/alice"}
    down = Result(("oarstat",), 1, "", "[ERROR] Cannot connect to the database\n")
    with pytest.raises(TransportError, match="Cannot connect to the database"):
        ssh_adapter(tmp_path, FakeRunner({**home, "oarstat": down})).states(["1"])
    refused = Result(("sh",), 4, "", "[ADMISSION RULE] Error: the walltime is too long\n")
    with pytest.raises(SubmitError, match=r"oarsub exited with 4: .*walltime is too long"):
        ssh_adapter(tmp_path, FakeRunner({**home, "oarsub": refused})).submit("k", [spec(1, "a")])
    garbage = Result(("oarstat",), 0, "Job id   Name\n", "")
    with pytest.raises(AdapterError, match="not JSON"):
        ssh_adapter(tmp_path, FakeRunner({**home, "oarstat": garbage})).states(["1"])


@pytest.fixture
def front(tmp_path):
    """The contract cluster's commands in a bin_dir, run here through the local transport."""
    state = OarState(tmp_path / "oar" / "state.json", cores=4)
    install_fake_commands(tmp_path / "bin", state.path, sys.executable)
    work = tmp_path / "work"
    work.mkdir()
    cluster = Cluster(
        "front", "oar-ssh", {"bin_dir": str(tmp_path / "bin"), "slots": 4, "remote_dir": str(tmp_path / "rd")}
    )
    adapter = OarSsh(cluster, AdapterContext(tmp_path, RealClock()), runner=LocalRunner(timeout=60))
    yield state, adapter, work
    adapter.close()


def test_ssh_batches_keep_their_words_and_map_exactly(front):
    state, adapter, work = front
    names = ["a", "a1", "job1", "job10"]
    words = work / "words.sh"
    words.write_text('#!/bin/sh\nfor word in "$@"; do printf "[%s]" "$word"; done\n')
    words.chmod(0o755)
    specs = [replace(spec(1, "a", "5", "0", *NASTY, directory=str(work)), argv=(str(words), "a", "5", "0", *NASTY))]
    specs += [spec(i, name, "5", "2", directory=str(work)) for i, name in enumerate(names[1:], start=2)]
    ids = adapter.submit("cigri.x.7.b.1", specs)
    assert adapter.find_batch("cigri.x.7.b.1") == ids and adapter.find_batch("cigri.x.7.b.9") is None
    jobs = {str(job["id"]): job for job in state.jobs()}
    assert [shlex.split(jobs[i]["params"]) for i in ids] == [list(s.argv[1:]) for s in specs]
    state.advance(0)
    assert adapter.capacity().grid_used == 4
    state.advance(60)
    statuses = adapter.states(ids)
    assert [(s.state, s.exit_code) for s in statuses.values()] == [(RemoteState.EXITED, 0)] + [
        (RemoteState.EXITED, 2)
    ] * 3
    assert adapter.tail(ids[3], "stderr", 5) == "stderr of job10\njob10 exited with status 2"
    ran = execute(jobs[ids[0]])  # as OAR runs it, by the shell: the words arrive literal, nothing else runs
    assert (ran.returncode, ran.stdout) == (0, "".join(f"[{word}]" for word in ("a", "5", "0", *NASTY)))
    assert not (work / "pwned").exists()


def test_ssh_jobs_get_their_environment_from_a_private_file(front):
    state, adapter, work = front
    dump = dump_environment(work)
    specs = [
        replace(spec(i, n, directory=str(work), env=SECRET_ENV), argv=(str(dump), n)) for i, n in ((1, "a"), (2, "b"))
    ]
    ids = adapter.submit("cigri.x.7.b.1", specs)
    jobs = {str(job["id"]): job for job in state.jobs()}
    assert not shows_a_secret(json.dumps(list(jobs.values())))  # command, initial request: what oarstat shows all
    env_file = Path(adapter.remote_dir) / "cigri.x.7.b.1.env"
    assert env_file.stat().st_mode & 0o777 == 0o600
    for job_id, name in zip(ids, ("a", "b"), strict=True):
        assert execute(jobs[job_id]).returncode == 0
        got = environment_of(work, name)
        assert {k: got[k] for k in SECRET_ENV} == SECRET_ENV and got["CIGRI_JOB_NAME"] == name
    assert not (work / "pwned").exists()


def test_ssh_single_jobs_cancel_and_resubmissions(front):
    state, adapter, work = front
    (prologue,) = adapter.submit("cigri.x.7.prologue", [spec(1, "-c", "set -e\nmkdir -p x", directory=str(work))])
    program = unwrapped(shlex.split(state.jobs()[0]["command"]))
    assert program == [f"{Path.home()}/bin/run", "-c", "set -e\nmkdir -p x"]
    moved, _ = adapter.submit("cigri.x.7.b.2", [spec(2, "moved", "50", directory=str(work)), spec(3, "b")])
    state.advance(2)
    new = str(state.resubmit_automatically(int(moved)))
    assert adapter.states([moved])[moved].reason == f"resubmitted by OAR as job {new}"
    adapter.cancel([prologue, moved])  # the followed job goes too
    got = adapter.states([prologue, moved])
    assert [s.state for s in got.values()] == [RemoteState.EXITED, RemoteState.KILLED]
    assert {str(j["id"]): j["state"] for j in state.jobs()}[new] == "Error"
    adapter.cancel([prologue])  # gone already: not an error


def test_ssh_details_are_oarstats_own_record_of_the_job(front):
    """gridstat -j JOB -C on oar-ssh: ``oarstat -f -J -j ID``'s record, as OAR gives it."""
    _state, adapter, work = front
    (job_id,) = adapter.submit("cigri.x.7.b.1", [spec(1, "a", "5", "0", directory=str(work))])
    record = adapter.details(job_id)
    assert (str(record["id"]), record["state"], record["name"]) == (job_id, "Waiting", "cigri.x.7.b.1")
    with pytest.raises(AdapterError, match="front: OAR knows no job 999"):
        adapter.details("999")


@pytest.mark.parametrize("flavour", ["2.5", "3"])
def test_rest_details_are_the_apis_own_record_of_the_job(oar, tmp_path, flavour):
    adapter = oar.rest(oar.serve(flavour=flavour))
    (job_id,) = adapter.submit("cigri.x.7.b.1", [spec(1, "a", "5", "0", directory=str(tmp_path))])
    record = adapter.details(job_id)
    assert (str(record["id"]), record["state"]) == (job_id, "Waiting")
    with pytest.raises(AdapterError, match="oar: OAR knows no job 999"):
        adapter.details("999")


# ---- whole campaigns through the cycle ----------------------------------------------------------------


def drive(cli, state: OarState, done, passes: int = 40) -> None:
    """Almighty passes, the contract clock moving 10 s between them, until ``done()``."""
    for _ in range(passes):
        cli("almighty")
        if done():
            return
        state.advance(10)
    raise AssertionError("the campaign did not end")


@pytest.mark.parametrize("adapter_name", ["oar-rest", "oar-ssh"])
def test_a_campaign_completes_with_events_and_resubmissions(cli, oar, tmp_path, adapter_name):
    state = oar.state
    work = tmp_path / "campaign"
    work.mkdir()
    if adapter_name == "oar-rest":
        options = ["--url", oar.serve(flavour="3").url, "--api-flavour", "3", "--login", LOGIN]
    else:
        install_fake_commands(tmp_path / "bin", state.path, sys.executable)
        options = ["--bin-dir", str(tmp_path / "bin"), "--slots", "4", "--remote-dir", str(tmp_path / "rd")]
    cli("gridclusters", "add", "oar", "--adapter", adapter_name, "--max-batch", "3", *options)
    params = ["a 5", "a1 5", "job1 5", "job10 5", "job100 5 3", "slow 30", "x 5", "y 5"]
    jdl = write_jdl(work, exec_file="/bin/run", exec_directory=str(work), params=params, clusters={"oar": {}})
    cid = cli.submit(jdl)
    killed = False

    def done() -> bool:
        nonlocal killed
        running = [j for j in state.jobs() if j["state"] == "Running" and j["params"].startswith("slow")]
        if running and not killed:  # OAR kills it once: cigri runs it again
            state.delete(running[0]["id"])
            killed = True
        for blacklist in cli.json("gridevents", "-c", str(cid), "-e", "BLACKLIST"):  # job100 closed oar to it
            cli("gridevents", str(blacklist["id"]), "-f")  # the user accepts the failure: the campaign goes on
        row = cli.json("gridstat", "-c", str(cid))
        return row["done"] + row["failed"] == row["total"]

    drive(cli, state, done)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["failed"], row["total"]) == (7, 1, 8)

    def name(job: dict) -> str:  # the word after the exec_file, in an array's or a plain job's command
        return unwrapped(shlex.split(job["command"]))[1]

    ran = [name(j) for j in state.jobs() if j["state"] == "Terminated"]
    assert sorted(ran) == sorted(p.split()[0] for p in params)  # each once to its end
    assert killed and sum(name(j) == "slow" for j in state.jobs()) == 2
    (event,) = cli.json("gridevents", "-c", str(cid), "-e", "EXIT_ERROR", "-a")
    assert "exited with status 3" in event["message"] and "job100 exited with status 3" in event["message"]
    remote = {str(j["id"]): name(j) for j in state.jobs()}
    jobs = cli.json("gridstat", "-c", str(cid), "-f")
    assert len(jobs) == 8 and all(remote[job["remote_id"]] == job["name"] for job in jobs)


@pytest.mark.parametrize("adapter_name", ["oar-rest 2.5", "oar-rest 3", "oar-ssh"])
def test_a_paused_campaigns_waiting_jobs_are_held_until_it_resumes(cli, oar, tmp_path, adapter_name):
    state = oar.state
    work = tmp_path / "campaign"
    work.mkdir()
    if adapter_name.startswith("oar-rest"):
        flavour = adapter_name.split()[1]
        options = ["--url", oar.serve(flavour=flavour).url, "--api-flavour", flavour, "--login", LOGIN]
    else:
        install_fake_commands(tmp_path / "bin", state.path, sys.executable)
        options = ["--bin-dir", str(tmp_path / "bin"), "--slots", "4", "--remote-dir", str(tmp_path / "rd")]
    cli("gridclusters", "add", "oar", "--adapter", adapter_name.split()[0], *options)
    params = [f"j{i} 20" for i in range(6)]  # 4 cores: 2 jobs wait
    cid = cli.submit(
        write_jdl(work, exec_file="/bin/run", exec_directory=str(work), params=params, clusters={"oar": {}})
    )
    cli("almighty")
    state.advance(2)
    cli("griddel", "-p", str(cid))
    cli("almighty")
    assert sorted(job["state"] for job in state.jobs()) == ["Hold", "Hold", "Running", "Running", "Running", "Running"]
    assert cli.json("gridstat", "-c", str(cid))["held"] == 2
    state.advance(60)  # the running jobs end and free their cores
    cli("almighty")
    assert sorted(job["state"] for job in state.jobs()) == ["Hold", "Hold", *["Terminated"] * 4]
    cli("griddel", "-r", str(cid))
    cli("almighty")
    assert sorted(job["state"] for job in state.jobs()) == [*["Terminated"] * 4, "Waiting", "Waiting"]
    drive(cli, state, lambda: cli.json("gridstat", "-c", str(cid))["state"] == "terminated")
    assert [job["state"] for job in state.jobs()] == ["Terminated"] * 6


@pytest.mark.parametrize("flavour", ["2.5", "3"])
def test_rest_holds_and_resumptions_are_idempotent_and_forgive_jobs_that_started(oar, flavour):
    adapter = oar.rest(oar.serve(flavour=flavour))
    started, waiting = (str(i) for i in oar.state.submit(LOGIN, "/bin/run", "core=4", params=["a 5", "b 5"]))
    oar.state.advance(0)
    for _ in range(2):  # OAR refuses the second hold, and the started job's: neither is an error
        adapter.hold([started, waiting])
        assert [job["state"] for job in oar.state.jobs()] == ["Launching", "Hold"]
    for _ in range(2):
        adapter.release([started, waiting])
        assert [job["state"] for job in oar.state.jobs()] == ["Launching", "Waiting"]


HOLD_REFUSED = Result(("oarhold", "5", "6"), 1, "", "[ERROR] permission denied\n")


def test_a_hold_oar_refuses_for_a_job_that_started_is_no_error(tmp_path):
    oarstat = json.dumps({"5": record(5, "Running"), "6": record(6, "Terminated", 0)})
    ssh_adapter(tmp_path, FakeRunner({"oarhold": HOLD_REFUSED, "oarstat": oarstat})).hold(["5", "6"])


def test_a_hold_oar_refuses_for_a_job_still_waiting_is_an_error(tmp_path):
    oarstat = json.dumps({"5": record(5, "Waiting"), "6": record(6, "Terminated", 0)})
    adapter = ssh_adapter(tmp_path, FakeRunner({"oarhold": HOLD_REFUSED, "oarstat": oarstat}))
    with pytest.raises(AdapterError, match="permission denied"):
        adapter.hold(["5", "6"])


def test_resources_not_alive_are_no_slots_but_counted_down():
    from cigri.adapters.oar import capacity_of_resources

    resources = [
        {"state": "Alive", "jobs": [7]},
        {"state": "Alive"},
        {"state": "Suspected"},
        {"state": "Absent"},
        {"state": "Dead", "jobs": [8]},
    ]
    assert capacity_of_resources(resources) == (2, 1, 3)
