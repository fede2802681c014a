"""Issue 25, item 3: the commands speak to the service. The same command scenario runs twice from two states
made alike: once on the state file (``grid --state``), once through a real ``grid serve`` subprocess
(``CIGRI_SERVER``), and the two transcripts (each step's exit code, stdout and stderr) must be equal, times
aside. On the Unix socket the service names the caller by its credentials; over TCP the test stands in for
the front proxy: the client sends the trusted header from 127.0.0.1 (httpx's ``headers``), as a real proxy
would after authenticating the user (:func:`cigri.client.connect` sends nothing of the kind itself)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cigri import client as client_mod
from cigri import clusters
from cigri.cli import STANDALONE, grid
from cigri.clock import RealClock
from cigri.model import EventClass, EventCode
from cigri.store import Store

from .conftest import stop_local_daemons
from .test_service import serving, socket_folder

TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\b1\d{9}(\.\d+)?\b")  # shown times, and epoch seconds


def make_state(folder: Path) -> Path:
    path = folder / "state.db"
    store = Store(path)
    clusters.ensure_default(store, RealClock())
    clusters.set_options(store, "local", {"slots": 2, "idle_exit": 2})
    store.close()
    return path


def open_event(state: Path, campaign_id: int) -> None:
    store = Store(state)
    with store.transaction():
        job = next(store.jobs(campaign_id))
        store.open_event(
            EventClass.CAMPAIGN, EventCode.EXIT_ERROR, "job a exited 3", 1.0, campaign_id=campaign_id, job_id=job.id
        )
    store.close()


class Way:
    """Runs commands one way: on a state file, or through a service."""

    def __init__(self, state: Path, server: str | None = None):
        self.state = state
        self.server = server

    def __call__(self, *args: str) -> tuple:
        if self.server is None:
            argv, env = ["--state", str(self.state), *args], {"CIGRI_SERVER": None}
        else:
            argv, env = list(args), {"CIGRI_SERVER": self.server}
        result = CliRunner().invoke(grid, argv, env=env, catch_exceptions=False)
        assert "Traceback" not in result.output + result.stderr
        return (args, result.exit_code, TIME.sub("<t>", result.stdout), TIME.sub("<t>", result.stderr))


def scenario(way: Way, work: Path, state: Path) -> list[tuple]:
    """Every command and its main options, in an order whose answers depend on the steps before."""
    steps = [
        ("gridsub", str(work / "sweep.yaml")),
        ("gridsub", "-d", "-j", json.dumps(jdl_of(work, "second", params=["x 1", "y 2"]))),
        ("gridsub", "-t", "test", "-f", str(work / "sweep.yaml")),
        ("gridsub", "-c", "1", "-J", '["d 4"]'),
        ("gridsub", "-c", "1", "-F", str(work / "more.txt")),
        ("gridsub", str(work / "bad.yaml")),
        ("gridsub", "-c", "99", "-J", '["q 1"]'),
        ("gridsub", "-j", json.dumps(jdl_of(work, "lost", params=["a"], clusters={"nowhere": {}}))),  # 3, the service's
        ("gridstat", "-j", "1", "-C"),
        ("gridstat",),
        ("gridstat", "--json"),
        ("gridstat", "-u", "nobody-here"),
        ("gridstat", "-c", "1"),
        ("gridstat", "-c", "1", "--json"),
        ("gridstat", "-c", "1", "-H"),
        ("gridstat", "1", "-f"),
        ("gridstat", "-f", "--json"),
        ("gridstat", "-f", "-H"),
        ("gridstat", "-j", "1"),
        ("gridstat", "-j", "1", "--json"),
        ("gridstat", "-j", "999"),
        ("gridstat", "-j", "1", "-O"),
        ("gridstat", "-c", "2", "-J"),  # 1 read a param_file: through the service, it was sent as params
        ("gridstat", "--eta", "--json"),
        ("gridstat", "--eta"),
        ("gridstat", "-c", "99"),
        ("gridclusters", "--json"),
        ("gridclusters", "-i", "local"),
        ("gridclusters", "-i", "local", "--json"),
        ("gridclusters", "-i", "nowhere"),
        ("gridclusters", "-u", "--json"),
        ("gridclusters", "-b"),
        ("gridnotify", "-m", "alice@example.org", "-s", "high"),
        ("gridnotify", "-w", "https://hooks.example.org/x"),
        ("gridnotify", "-m", "alice@example.org", "-s", "low"),
        ("gridnotify", "-l"),
        ("gridnotify", "-l", "--json"),
        ("gridnotify", "-u", "-m", "alice@example.org"),
        ("gridnotify", "-u"),
        ("gridnotify", "-u"),
    ]
    transcript = [way(*step) for step in steps]
    open_event(state, 1)  # as a failed job opens one
    steps = [
        ("gridstat",),
        ("gridevents",),
        ("gridevents", "-c", "1"),
        ("gridevents", "-c", "1", "--json"),
        ("gridevents", "-c", "1", "-e", "exit_error", "-H"),
        ("gridevents", "1"),
        ("gridevents", "-g"),
        ("gridstat", "-c", "1", "-e"),
        ("gridevents", "-c", "1", "-f", "-r"),
        ("gridevents", "-c", "1", "-a", "--json"),
        ("gridevents", "1", "-f"),
        ("gridevents", "99"),
        ("griddel", "-p", "1"),
        ("gridstat", "-c", "1", "--json"),
        ("griddel", "-p", "1"),
        ("griddel", "-r", "1"),
        ("griddel", "-j", "1"),
        ("griddel", "-j", "1"),
        ("griddel", "2", "3"),
        ("griddel", "-c", "2"),
        ("griddel", "--purge", "2"),
        ("gridstat", "--json"),
        ("griddel",),
    ]
    return transcript + [way(*step) for step in steps]


def jdl_of(work: Path, name: str, **fields) -> dict:
    return {
        "name": name,
        "exec_file": "/bin/true",
        "exec_directory": str(work),
        "walltime": "00:01:00",
        "clusters": {"local": {}},
        **fields,
    }


@pytest.fixture
def work(tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "params.txt").write_text("a 1\n\nb 2\nc 'x y'\n")
    (folder / "more.txt").write_text("e 5\r\nf 6\n")
    (folder / "sweep.yaml").write_text(json.dumps(jdl_of(folder, "sweep", param_file="params.txt")))
    (folder / "bad.yaml").write_text(json.dumps(jdl_of(folder, "bad", params=["a"], walltime="soon")))
    return folder


@pytest.fixture
def states(tmp_path):
    made = []
    for name in ("local", "served"):
        (tmp_path / name).mkdir()
        made.append(make_state(tmp_path / name))
    yield made
    for path in made:
        stop_local_daemons(path.parent)


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_the_command_suite_answers_the_same_through_the_service(transport, states, work, tmp_path, monkeypatch):
    local_state, served_state = states
    expected = scenario(Way(local_state), work, local_state)
    if transport == "unix":
        with socket_folder() as folder, serving(served_state, tmp_path, f"unix:{folder / 'api.sock'}") as served:
            got = scenario(Way(served_state, served.listen), work, served_state)
    else:
        # the front proxy's part: the user it authenticated, named in the trusted header from 127.0.0.1
        monkeypatch.setattr(
            client_mod, "connect", functools.partial(client_mod.connect, headers={"X-CIGRI-USER": "root"})
        )
        with serving(served_state, tmp_path) as served:
            got = scenario(Way(served_state, f"http://{served.listen}"), work, served_state)
    for want, have in zip(expected, got, strict=True):
        assert have == want
    assert [step[1] for step in expected].count(0) > 40  # the scenario does things, not only refuse them


@pytest.fixture
def served(states, tmp_path):
    with socket_folder() as folder, serving(states[1], tmp_path, f"unix:{folder / 'api.sock'}") as service:
        yield service


def one_line_refusal(args: list[str], server: str, code: int = 2, command=grid) -> str:
    result = CliRunner().invoke(command, args, env={"CIGRI_SERVER": server}, catch_exceptions=False)
    assert result.exit_code == code, result.output
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    return result.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["gridsub", "-n", "x.yaml"], "-n"),
        (["gridsub", "-c", "1", "-n", "-J", '["a"]'], "-n"),
        (["gridstat", "-c", "1", "--plot"], "--plot"),
        (["gridevents", "--blacklist-cluster", "local"], "--blacklist-cluster"),
        (["gridevents", "--unblacklist", "local"], "--unblacklist"),
        (["gridevents", "--mark-job-event", "1"], "--mark-job-event"),
        (["gridclusters", "add", "big", "--adapter", "local"], "add"),
        (["gridclusters", "remove", "local"], "remove"),
        (["--state", "/nowhere/state.db", "gridstat"], "--state"),
        (["gridstat", "--state", "/nowhere/state.db"], "--state"),
    ],
)
def test_what_the_api_cannot_do_is_refused_in_one_line(args, named, served):
    assert named in one_line_refusal(args, served.listen)


def test_the_option_and_the_standalone_scripts_reach_the_service(served, work):
    gridsub, gridstat = STANDALONE["gridsub"], STANDALONE["gridstat"]
    runner = CliRunner()
    submitted = runner.invoke(
        gridsub, ["--server", served.listen, str(work / "sweep.yaml")], env={"CIGRI_SERVER": None}, prog_name="gridsub"
    )
    assert submitted.exit_code == 0, submitted.output
    assert "CAMPAIGN_ID=1" in submitted.stdout
    listed = runner.invoke(grid, ["gridstat", "--server", served.listen, "--json"], env={"CIGRI_SERVER": None})
    assert [c["name"] for c in json.loads(listed.stdout)] == ["sweep"]
    jobs = runner.invoke(gridstat, ["-c", "1", "-f", "--json"], env={"CIGRI_SERVER": served.listen})
    assert [j["params"] for j in json.loads(jobs.stdout)] == ["a 1", "b 2", "c 'x y'"]  # read here, sent as params


def test_a_service_that_does_not_answer_is_one_line(tmp_path):
    missing = f"unix:{tmp_path / 'none.sock'}"
    assert "cannot reach the service" in one_line_refusal(["gridstat"], missing, code=9)
    assert "--server" in one_line_refusal(["gridstat"], "ftp://example.org", code=2)


def test_the_jdl_reads_the_jdl_dir_and_param_file_here(served, work):
    """What names this machine's files is read here and sent as content: the service never reads them."""
    jdl = jdl_of(work, "here", param_file="{JDL_DIR}/params.txt", exec_file="{JDL_DIR}/run.sh")
    (work / "here.yaml").write_text(json.dumps(jdl))
    runner = CliRunner()
    env = {"CIGRI_SERVER": served.listen}
    assert runner.invoke(grid, ["gridsub", str(work / "here.yaml")], env=env).exit_code == 0
    saved = json.loads(runner.invoke(grid, ["gridstat", "-c", "1", "-J"], env=env).stdout)
    assert saved["clusters"]["local"]["exec_file"] == f"{work}/run.sh"
    assert saved["source"] == {"params": 3}
