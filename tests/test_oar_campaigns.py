"""Whole campaigns over contract OAR clusters (tests/oar): many jobs over two REST clusters and the local one,
faults of the API during a campaign, and oar-ssh through the real sshd as the unprivileged user.

The contract's clock moves only when a test advances it: the tests run ``almighty`` passes in a loop bounded by
a number of passes, advancing the clusters' clocks between passes."""

from __future__ import annotations

import hashlib
import shlex
from collections import Counter
from pathlib import Path

import pytest

from tests.oar.contract import OarState, unwrapped
from tests.oar.fake_commands import execute, install_fake_commands
from tests.oar.server import OarServer

from .conftest import write_jdl
from .slurm import job_script as words_script
from .slurm import runs as words_runs

TOKEN = "oar3.campaign-token.123"
LOGIN = "cigritest"
SCRIPT = """#!/bin/sh
echo "$1" >> "$(dirname "$0")/runs.log"
"""


def job_script(folder: Path) -> Path:
    """The exec_file: logs its first argument (the job's name) to runs.log beside it, exits 0."""
    script = folder / "job.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    return script


def local_runs(folder: Path) -> list[str]:
    log = folder / "runs.log"
    return log.read_text().splitlines() if log.exists() else []


def name_of(job: dict) -> str:
    """A contract job's name: the word after the exec_file (array line or plain job's command)."""
    return unwrapped(shlex.split(job["command"]))[1]


def cigri_jobs(state: OarState) -> list[dict]:
    return [job for job in state.jobs() if (job["name"] or "").startswith("cigri.")]


def terminated(state: OarState) -> list[str]:
    return [name_of(job) for job in cigri_jobs(state) if job["state"] == "Terminated"]


def drive(cli, states, step, done, max_passes: int = 300, between=None) -> int:
    """``almighty`` passes until ``done()``, the contract clocks moving ``step`` s between passes; the passes.
    Bounded by a number of passes, not by wall-clock time: a slow machine takes longer, never fails."""
    for passes in range(1, max_passes + 1):
        cli("almighty")
        if done():
            return passes
        if between:
            between(passes)
        for state in states:
            state.advance(step)
    raise AssertionError(f"the campaign did not end within {max_passes} passes")


@pytest.fixture
def servers():
    started: list[OarServer] = []

    def serve(path: Path, **options) -> OarServer:
        server = OarServer(path, **options)
        server.start()
        started.append(server)
        return server

    yield serve
    for server in started:
        server.stop()


def token_file(folder: Path, token: str) -> Path:
    path = folder / "token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path


# ---- 500 jobs over two OAR clusters and the local one ---------------------------------------------------


def test_500_jobs_over_two_oar_clusters_and_local_with_best_effort_kills(cli, store, servers, tmp_path):
    small = OarState(tmp_path / "oar25" / "state.json", cores=8)
    big = OarState(tmp_path / "oar3" / "state.json", cores=16, nodes=2)
    old = servers(small.path, flavour="2.5", auth="ident")
    new = servers(big.path, flavour="3", auth="bearer", token=TOKEN)
    cli("gridclusters", "add", "oar25", "--adapter", "oar-rest", "--url", old.url, "--login", LOGIN)
    cli(
        "gridclusters",
        *("add", "oar3", "--adapter", "oar-rest", "--url", new.url, "--api-flavour", "3", "--auth", "bearer"),
        *("--token-file", str(token_file(tmp_path, TOKEN)), "--max-batch", "50"),
    )
    cli("gridclusters", "set", "local", "--queue-depth", "6")
    work = tmp_path / "campaign"
    work.mkdir()
    script = job_script(work)
    names = [f"n{i:03d}" for i in range(500)]
    params = [f"{name} {1 + i % 4 * 2}" for i, name in enumerate(names)]
    clusters = {"oar25": {}, "oar3": {}, "local": {}}
    cid = cli.submit(write_jdl(work, exec_file=str(script), params=params, clusters=clusters))
    kills = Counter()
    moved: dict[tuple[str, str], str] = {}  # (cluster, cigri's remote id) -> the job OAR resubmitted it as

    def preempt(passes: int) -> None:
        if passes == 2:  # a normal job of someone else takes all the cores of oar3: OAR kills best-effort jobs
            big.submit("other", "/bin/true blocker 12", resources="/nodes=1/core=16")
        if passes in (2, 3, 4):  # and the admin of oar25 kills some by hand
            running = [j for j in cigri_jobs(small) if j["state"] == "Running"]
            for job in running[:2]:
                small.besteffort_kill(job["id"])
                kills["oar25"] += 1
            if passes == 3 and running[2:]:  # OAR resubmits one by itself: cigri follows it, runs it no more
                moved["oar25", str(running[2]["id"])] = str(small.resubmit_automatically(running[2]["id"]))

    def done() -> bool:
        return cli.json("gridstat", "-c", str(cid))["state"] == "terminated"

    drive(cli, (small, big), 20, done, between=preempt)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["total"], row["failed"]) == (500, 500, 0)
    killed = {
        where: [j for j in cigri_jobs(state) if any(e["type"] == "BESTEFFORT_KILL" for e in j["events"])]
        for where, state in (("oar25", small), ("oar3", big))
    }
    assert len(killed["oar25"]) == kills["oar25"] >= 2 and len(killed["oar3"]) >= 1
    assert all(j["types"] == ["besteffort"] for s in (small, big) for j in cigri_jobs(s))
    # each job ended well exactly once, wherever it ran
    ends = Counter(terminated(small) + terminated(big) + local_runs(work))
    assert ends == Counter(names)
    spread = {"oar25": len(terminated(small)), "oar3": len(terminated(big)), "local": len(local_runs(work))}
    assert all(spread.values()), spread
    # cigri's record of each job: the cluster and remote id of its successful run
    ran = {
        "oar25": {str(j["id"]): name_of(j) for j in cigri_jobs(small) if j["state"] == "Terminated"},
        "oar3": {str(j["id"]): name_of(j) for j in cigri_jobs(big) if j["state"] == "Terminated"},
    }
    jobs = cli.json("gridstat", "-c", str(cid), "-f")
    assert sorted(job["name"] for job in jobs) == names
    assert len(moved) == 1
    assert all(
        ran[job["cluster"]][moved.get((job["cluster"], job["remote_id"]), job["remote_id"])] == job["name"]
        for job in jobs
        if job["cluster"] != "local"
    )
    assert Counter(job["cluster"] for job in jobs) == spread
    # a best-effort kill is a preemption: the job goes back without spending an attempt (resumes, not resubmits)
    rows = list(store.db["jobs"].rows_where("campaign_id = ?", [cid]))
    assert {row["name"] for row in rows if row["resumes"]} == {name_of(j) for js in killed.values() for j in js}
    assert not any(row["resubmits"] for row in rows)


# ---- faults of the API during a campaign ---------------------------------------------------------------


def lose_next_submission_answer(server: OarServer, delay: float) -> None:
    """The next POST /jobs is done on the cluster, but its answer comes after the client gave up."""
    handle = server.handle

    def late(method, path, query, headers, body):
        answer = handle(method, path, query, headers, body)
        if method == "POST" and path.rstrip("/").endswith("jobs") and server.handle is late:
            del server.handle  # once
            server.hold(delay)
        return answer

    server.handle = late


def cluster_events(cli) -> list[dict]:
    return [e for e in cli.json("gridevents", "-a") if e["class"] == "cluster"]


def test_api_faults_during_a_campaign_give_events_and_lose_or_double_no_job(cli, servers, tmp_path):
    states = {name: OarState(tmp_path / name / "state.json", cores=4) for name in ("auth", "small", "flaky")}
    auth = servers(states["auth"].path, flavour="3", auth="bearer", token=TOKEN)
    small = servers(states["small"].path, max_param_lines=4)
    flaky = servers(states["flaky"].path, hang_seconds=2)
    common = ("--adapter", "oar-rest", "--login", LOGIN, "--queue-depth", "4")
    wrong = token_file(tmp_path, "not-the-token")
    cli("gridclusters", "add", "auth", *common, "--url", auth.url, "--api-flavour", "3", "--auth", "bearer")
    cli("gridclusters", "set", "auth", "--token-file", str(wrong))
    cli("gridclusters", "add", "small", *common, "--url", small.url)
    cli("gridclusters", "add", "flaky", *common, "--url", flaky.url, "--timeout", "1")
    work = tmp_path / "campaign"
    work.mkdir()
    names = [f"f{i:03d}" for i in range(150)]
    params = [f"{name} {1 + i % 3}" for i, name in enumerate(names)]
    clusters = {name: {} for name in states}
    cid = cli.submit(write_jdl(work, exec_file=str(job_script(work)), params=params, clusters=clusters))
    seen: dict[int, list[dict]] = {}
    refused_at_first = []

    def faults(passes: int) -> None:
        seen[passes] = cli.json("gridevents", "-a")
        if passes == 1:
            refused_at_first.append(len(cigri_jobs(states["small"])))
            wrong.write_text(TOKEN + "\n")  # the user fixes the token
            (refused,) = cli.json("gridevents", "-c", str(cid))
            cli("gridclusters", "set", "small", "--max-batch", "4")  # as the event says
            cli("gridevents", str(refused["id"]), "-f")
            flaky.fail_next(500)  # a failing cluster is asked nothing more in that pass: one fault is one event
        elif passes == 3:
            flaky.hang_next(1)

    def done() -> bool:
        return cli.json("gridstat", "-c", str(cid))["state"] == "terminated"

    drive(cli, states.values(), 10, done, between=faults)

    # pass 1: the wrong token is a cluster event, the too large batch a campaign event on that cluster
    first = {(e["class"], e["cluster"]): e for e in seen[1]}
    assert first["cluster", "auth"]["code"] == "CLUSTER_UNREACHABLE"
    assert "refused the authentication of cigritest (HTTP 401)" in first["cluster", "auth"]["message"]
    assert TOKEN not in first["cluster", "auth"]["message"]
    refused = first["campaign", "small"]
    assert (refused["code"], refused["campaign_id"]) == ("SUBMIT_ERROR", cid)
    assert (
        "too large for OAR's API (HTTP 413)" in refused["message"]
        and "lower max_batch (now 1000)" in refused["message"]
    )
    assert refused_at_first == [0]  # the refused batch left nothing on small
    # every cluster problem is closed once the cluster answers again
    events = cluster_events(cli)
    assert all(e["code"] == "CLUSTER_UNREACHABLE" and e["state"] == "closed" for e in events), events
    messages = {e["cluster"]: [] for e in events}
    for e in events:
        messages[e["cluster"]].append(e["message"])
    assert len(messages["auth"]) == 1 and "small" not in messages
    assert [m for m in messages["flaky"] if "HTTP 500" in m] and [
        m for m in messages["flaky"] if "no answer within 1 s" in m
    ]
    assert len(messages["flaky"]) == 2, messages["flaky"]
    # after the fixes every cluster took jobs, small in batches of 4 at most
    arrays = Counter(j["array_id"] for j in cigri_jobs(states["small"]))
    assert arrays and max(arrays.values()) <= 4
    assert all(terminated(s) for s in states.values())
    # nothing lost, nothing run twice
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["total"], row["failed"]) == (150, 150, 0)
    ends = Counter(name for s in states.values() for name in terminated(s))
    assert ends == Counter(names)


@pytest.mark.parametrize(
    "step",
    [
        0,
        30,
    ],
    ids=["jobs-still-queued", "jobs-ended-before-the-next-pass"],
)
def test_a_batch_whose_submission_answer_is_lost_is_not_submitted_again(cli, servers, tmp_path, step):
    state = OarState(tmp_path / "oar" / "state.json", cores=4)
    server = servers(state.path)
    cli("gridclusters", "add", "oar", "--adapter", "oar-rest", "--url", server.url, "--login", LOGIN, "--timeout", "1")
    work = tmp_path / "campaign"
    work.mkdir()
    names = [f"l{i}" for i in range(6)]
    cid = cli.submit(
        write_jdl(work, exec_file=str(job_script(work)), params=[f"{n} 2" for n in names], clusters={"oar": {}})
    )
    lose_next_submission_answer(server, 1.5)
    cli("almighty")  # OAR took the array, cigri did not hear it
    (event,) = cluster_events(cli)
    assert "no answer within 1 s" in event["message"] and event["state"] == "open"
    assert len(cigri_jobs(state)) == 6
    state.advance(step)  # 0: the jobs are still current at the next pass; 30: they ran to their end before it

    def done() -> bool:
        return cli.json("gridstat", "-c", str(cid))["state"] == "terminated"

    drive(cli, (state,), 10, done)
    assert [e["state"] for e in cluster_events(cli)] == ["closed"]
    assert len(cigri_jobs(state)) == 6 and Counter(terminated(state)) == Counter(names)
    assert cli.json("gridstat", "-c", str(cid))["done"] == 6


# ---- oar-ssh through the real sshd, as the unprivileged user --------------------------------------------


@pytest.mark.slurm
def test_an_oar_ssh_campaign_as_the_unprivileged_user_keeps_its_words(cli, slurm, shared_dir):
    """The fake OAR commands run as cigritest through the sshd of scripts/slurm-local.sh (the slurm fixture
    checks those services are up)."""
    state = OarState(shared_dir / "oar-state.json", cores=4)
    bin_dir = shared_dir / "oar-bin"
    install_fake_commands(bin_dir, state.path)  # /usr/bin/python3: cigritest cannot run the venv's python
    cli(
        *("gridclusters", "add", "front", "--adapter", "oar-ssh"),
        *("--host", slurm["SSH_HOST"], "--port", slurm["SSH_PORT"], "--user", slurm["SLURM_TEST_USER"]),
        *("--identity-file", slurm["SSH_KEY"], "--bin-dir", str(bin_dir), "--slots", "4"),
        *("--remote-dir", str(shared_dir / "remote"), "--max-batch", "20"),
    )
    nasty = ["a b; echo hacked", "$(touch pwned)", "`touch pwned2`", "it's *"]
    names = [f"s{i:02d}" for i in range(50)]
    params = [shlex.join([name, "3", *nasty]) for name in names]
    cid = cli.submit(
        write_jdl(shared_dir, exec_file=str(words_script(shared_dir)), params=params, clusters={"front": {}})
    )

    def done() -> bool:
        return cli.json("gridstat", "-c", str(cid))["state"] == "terminated"

    killed = []

    def preempt(passes: int) -> None:
        running = [job for job in cigri_jobs(state) if job["state"] == "Running"]
        if passes == 2 and running:
            state.besteffort_kill(running[0]["id"])  # a best-effort job OAR kills: cigri runs it again
            killed.append(name_of(running[0]))

    drive(cli, (state,), 10, done, between=preempt)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["total"], row["failed"]) == (50, 50, 0)
    jobs = cigri_jobs(state)
    assert {job["owner"] for job in jobs} == {slurm["SLURM_TEST_USER"]} and len(killed) == 1
    # every job's words reached oarsub as they were written; each job ran to its end once
    assert sorted(unwrapped(shlex.split(job["command"]))[1:] for job in jobs) == sorted(
        [name, "3", *nasty] for name in names + killed
    )
    assert all(shlex.split(job["params"]) == unwrapped(shlex.split(job["command"]))[1:] for job in jobs)
    assert Counter(terminated(state)) == Counter(names)
    # run as OAR runs them (by cigritest's shell): each job gets its words literally, the payloads never run
    user = slurm["SLURM_TEST_USER"]
    ran = [execute(job, user) for job in jobs if job["state"] == "Terminated"]
    assert [(r.returncode, r.stderr) for r in ran] == [(0, "")] * len(names)
    words = "".join(f" [{word}]" for word in ("3", *nasty))
    assert sorted(words_runs(shared_dir)) == [name + words for name in names]
    assert not list(shared_dir.glob("pwned*")) and not list(Path("/home/cigritest").glob("pwned*"))
    assert not cli.json("gridevents", "-a")


READER = """#!/bin/sh
# NAME DURATION EXIT CHUNK (the contract reads the first three): reads its chunk and the shared file from
# CIGRI_INPUT_DIR, writes their checksum
name=$1; chunk=$4
cat "$CIGRI_INPUT_DIR/chunk_$chunk.dat" "$CIGRI_INPUT_DIR/common.dat" | sha256sum | cut -d' ' -f1 > "out_$name.txt"
"""


@pytest.mark.slurm
def test_an_oar_ssh_campaign_stages_its_inputs_and_gathers_its_outputs_through_ssh(cli, slurm, shared_dir):
    """oar-ssh moves files as slurm-ssh does (cigri.adapters.files), here through the real sshd as cigritest:
    the inputs reach the cluster's cache, each job (run as OAR runs it, by cigritest's shell, while the
    contract holds it Running) reads them, its output comes back checked, and the cache ends empty."""
    state = OarState(shared_dir / "oar-state.json", cores=4)
    bin_dir = shared_dir / "oar-bin"
    install_fake_commands(bin_dir, state.path)
    cache, work, data = shared_dir / "cache", shared_dir / "work", shared_dir / "data"
    for folder in (work, data):
        folder.mkdir(mode=0o777)
        folder.chmod(0o777)
    for i in range(2):
        (data / f"chunk_{i}.dat").write_bytes(bytes(range(256)) * (30 + i))
    (data / "common.dat").write_bytes(b"\0shared\n" * 40)
    reader = shared_dir / "reader.sh"
    reader.write_text(READER)
    reader.chmod(0o755)
    cli(
        *("gridclusters", "add", "front", "--adapter", "oar-ssh"),
        *("--host", slurm["SSH_HOST"], "--port", slurm["SSH_PORT"], "--user", slurm["SLURM_TEST_USER"]),
        *("--identity-file", slurm["SSH_KEY"], "--bin-dir", str(bin_dir), "--slots", "4"),
        *("--remote-dir", str(shared_dir / "remote"), "--cache-dir", str(cache)),
    )
    cid = cli.submit(
        write_jdl(
            shared_dir,
            exec_file=str(reader),
            exec_directory=str(work),
            params=["a 15 0 0", "b 15 0 1", "c 15 0 0"],  # running 15 s: seen Running between two passes
            data_source=str(data),
            input_files=["chunk_{4}.dat", "common.dat"],
            output_file="out_{1}.txt",
            output_destination=str(shared_dir / "results"),
            clusters={"front": {}},
        )
    )
    ran: set[int] = set()

    def run_the_running(_passes: int) -> None:
        for job in cigri_jobs(state):
            if job["state"] == "Running" and job["id"] not in ran:
                ran.add(job["id"])
                done = execute(job, slurm["SLURM_TEST_USER"])
                assert (done.returncode, done.stderr) == (0, ""), job["command"]

    drive(
        cli,
        (state,),
        10,
        lambda: cli.json("gridstat", "-c", str(cid))["state"] == "terminated",
        between=run_the_running,
    )
    assert len(ran) == 3 and cli.json("gridevents", "-a") == []
    for name, chunk in (("a", 0), ("b", 1), ("c", 0)):
        both = (data / f"chunk_{chunk}.dat").read_bytes() + (data / "common.dat").read_bytes()
        gathered = shared_dir / "results" / name / f"out_{name}.txt"
        assert gathered.read_text().strip() == hashlib.sha256(both).hexdigest(), name
    assert [p for p in cache.rglob("*") if p.is_file()] == []


def test_a_looping_almighty_reads_a_fixed_token_again(cli, cycle, servers, tmp_path):
    state = OarState(tmp_path / "oar" / "state.json", cores=4)
    server = servers(state.path, flavour="3", auth="bearer", token=TOKEN)
    tokens = token_file(tmp_path, "expired-token")
    cli(
        *("gridclusters", "add", "oar", "--adapter", "oar-rest", "--url", server.url, "--api-flavour", "3"),
        *("--auth", "bearer", "--token-file", str(tokens)),
    )
    work = tmp_path / "campaign"
    work.mkdir()
    cli.submit(write_jdl(work, exec_file=str(job_script(work)), params=["a 1", "b 1"], clusters={"oar": {}}))
    cycle.run()  # one Cycle for every pass, as `almighty --loop` has
    (event,) = cluster_events(cli)
    assert "HTTP 401" in event["message"]
    tokens.write_text(TOKEN + "\n")  # the user renews the token
    cycle.run()
    assert [e["state"] for e in cluster_events(cli)] == ["closed"]
    assert len(cigri_jobs(state)) == 2


def test_the_413_advice_is_a_command_that_works(cli, servers, tmp_path):
    state = OarState(tmp_path / "oar" / "state.json", cores=4)
    server = servers(state.path, max_param_lines=2)
    cli("gridclusters", "add", "oar", "--adapter", "oar-rest", "--url", server.url, "--login", LOGIN)
    work = tmp_path / "campaign"
    work.mkdir()
    cid = cli.submit(write_jdl(work, exec_file=str(job_script(work)), params=["a", "b", "c"], clusters={"oar": {}}))
    cli("almighty")
    (event,) = cli.json("gridevents", "-c", str(cid))
    advice = shlex.split(event["message"].split("`")[1].replace("...", "2"))
    assert advice[0] == "grid"
    cli(*advice[1:])
