"""Both OAR adapters (oar-ssh and oar-rest) against the real OAR 2.5.9 of scripts/oar-local.sh: a 4-core node on
localhost, its REST API behind Apache, jobs run as the unprivileged OAR_USER.

Each test waits on OAR's states (polled, with a deadline), never on fixed delays. OAR takes 8-10 s a job from
submission to its end here and checks walltimes about every 30 s: job counts stay small and the jobs of a test
run side by side. The contract server of tests/oar stays for OAR 3's API, which Debian does not ship."""

from __future__ import annotations

import hashlib
import shlex
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cigri.adapters import AdapterContext
from cigri.adapters.oar_rest import OarRest
from cigri.adapters.oar_ssh import OarSsh
from cigri.clock import RealClock
from cigri.model import Cluster, JobSpec, KillCause, RemoteState, RemoteStatus

from .conftest import write_jdl
from .oar_local import as_user, records, rest_config, rest_options, ssh_config, ssh_options, unique

pytestmark = pytest.mark.oar

ADAPTERS = ["oar-ssh", "oar-rest"]
ENDED = (RemoteState.EXITED, RemoteState.KILLED)
NASTY = ["a b; echo hacked", "$(touch pwned)", "`touch pwned2`", "it's *", '"q" \\ $HOME', "/~/x", "-n", ""]
JOB = r"""#!/bin/sh
# NAME ACTION WORDS...: writes its words to NAME.words and what OAR gave it to NAME.env, in its folder
name=$1; action=$2; shift 2
for word in "$@"; do printf '[%s]' "$word"; done > "$name.words"
echo "$CIGRI_JOB_NAME $(wc -l < "$CIGRI_NODE_FILE") $(grep Cpus_allowed_list /proc/self/status | cut -f2) $PWD" \
  > "$name.env"
case $action in
  fail) echo "failing on purpose: $name" >&2; exit 3 ;;
  signal) kill -9 $$ ;;
  sleep:*) sleep "${action#sleep:}" ;;
  checkpoint) trap 'echo checkpointed > "$name.checkpoint"; exit 0' USR2; sleep 300 & wait ;;
esac
echo "ok $name"
"""


def job_script(folder: Path) -> Path:
    script = folder / "job.sh"
    script.write_text(JOB)
    script.chmod(0o755)
    return script


def spec(job_id: int, folder: Path, name: str, action: str = "ok", *words: str, **fields) -> JobSpec:
    fields.setdefault("walltime", 300)
    return JobSpec(
        job_id=job_id,
        campaign_id=1,
        name=name,
        argv=(str(folder / "job.sh"), name, action, *words),
        directory=str(folder),
        user="cigri",
        **fields,
    )


@pytest.fixture(params=ADAPTERS)
def adapter(request, real_oar, oar_dir, tmp_path) -> Iterator[OarSsh | OarRest]:
    """One adapter as the OAR user; oar-ssh stages its files in the test's folder, not in ~/.cigri."""
    context = AdapterContext(tmp_path, RealClock())
    if request.param == "oar-ssh":
        made = OarSsh(Cluster("oar", "oar-ssh", ssh_config(real_oar, oar_dir / ".cigri")), context)
    else:
        made = OarRest(Cluster("oar", "oar-rest", rest_config(real_oar)), context)
    job_script(oar_dir)
    yield made
    made.close()


def wait_states(
    adapter, ids: list[str], until: Callable[[dict[str, RemoteStatus]], bool], timeout: float = 120
) -> tuple[dict[str, RemoteStatus], dict[str, list[RemoteState]]]:
    """Poll the adapter until ``until(states)``; the states, and each job's distinct states in the order seen."""
    seen: dict[str, list[RemoteState]] = {job_id: [] for job_id in ids}
    deadline = time.monotonic() + timeout
    while True:
        states = adapter.states(ids)
        for job_id, status in states.items():
            if not seen[job_id] or seen[job_id][-1] != status.state:
                seen[job_id].append(status.state)
        if until(states):
            return states, seen
        if time.monotonic() > deadline:
            raise AssertionError(f"OAR's jobs did not get there within {timeout} s: {states}")
        time.sleep(0.3)


def all_ended(states: dict[str, RemoteStatus]) -> bool:
    return all(status.state in ENDED for status in states.values())


def in_state(*wanted: RemoteState) -> Callable[[dict[str, RemoteStatus]], bool]:
    return lambda states: all(status.state in wanted for status in states.values())


def oar_state(env: dict[str, str], job_id: str) -> str:
    return records(env, job_id)[job_id]["state"]


def wait_oar(env: dict[str, str], job_id: str, state: str, timeout: float = 30) -> None:
    """Poll OAR's record of the job until it is in ``state``."""
    deadline = time.monotonic() + timeout
    while (now := oar_state(env, job_id)) != state:
        if time.monotonic() > deadline:
            raise AssertionError(f"OAR's job {job_id} is {now}, not {state}, after {timeout} s")
        time.sleep(0.2)


def test_batches_keep_their_words_resources_properties_directory_and_project(adapter, real_oar, oar_dir):
    """An array (mapped by index), a single job and a 2-core job: words as written, exit statuses as a shell
    says them, each job's states in order, and OAR's records of what was asked."""
    key = unique("cigri.real.1.b.")
    options = {"resources": "/core=1", "properties": "host = 'localhost'", "project": "cigri-tests"}
    batch = [
        spec(1, oar_dir, "a", "sleep:8", *NASTY, **options),
        spec(2, oar_dir, "a1", "fail", **options),
        spec(3, oar_dir, "job1", "signal", **options),
    ]
    ids = adapter.submit(key, batch)
    _, early = wait_states(adapter, ids[:1], lambda states: states[ids[0]].state != RemoteState.PENDING)
    (single,) = adapter.submit(key + "s", [spec(4, oar_dir, "alone", "ok", *NASTY, **options)])
    (wide,) = adapter.submit(key + "w", [spec(5, oar_dir, "wide", resources="/core=2")])
    assert adapter.find_batch(key) == ids and adapter.find_batch(key + "x") is None
    states, seen = wait_states(adapter, [*ids, single, wide], all_ended)
    assert [(states[i].state, states[i].exit_code) for i in (*ids, single, wide)] == [
        (RemoteState.EXITED, 0),
        (RemoteState.EXITED, 3),
        (RemoteState.EXITED, 137),  # killed by SIGKILL, as a shell says it
        (RemoteState.EXITED, 0),
        (RemoteState.EXITED, 0),
    ]
    life = [RemoteState.PENDING, RemoteState.RUNNING, RemoteState.EXITED]
    assert all(s == [state for state in life if state in s] and s[-1] == RemoteState.EXITED for s in seen.values())
    assert RemoteState.RUNNING in early[ids[0]]  # an 8-s job is seen running (PENDING: see the hold test)
    words = "".join(f"[{word}]" for word in NASTY)
    assert [(oar_dir / f"{name}.words").read_text() for name in ("a", "a1", "job1", "alone")] == [words, "", "", words]
    assert not list(oar_dir.glob("pwned*")) and not list(Path(real_oar["OAR_HOME"]).glob("pwned*"))
    # the job's own view: its name, its node file (a line per core), its cpuset, its folder
    env = {name: (oar_dir / f"{name}.env").read_text().split() for name in ("a", "wide")}
    assert env["a"][0::3] == ["a", str(oar_dir)] and env["a"][1] == "1" and "-" not in env["a"][2]
    assert env["wide"][:2] == ["wide", "2"] and "-" in env["wide"][2]  # two cores: a range like 0-1
    assert adapter.tail(ids[1], "stderr", 5) == "failing on purpose: a1"
    assert adapter.tail(single, "stdout", 0) == "ok alone"
    # OAR's own records of the request
    got = records(real_oar, *ids, single)
    assert {got[i]["project"] for i in got} == {"cigri-tests"}
    assert all("host = 'localhost'" in got[i]["properties"] for i in got)
    assert all("/core=1,walltime=0:5:0" in got[i]["wanted_resources"] for i in got)
    assert {got[i]["launchingDirectory"] for i in got} == {str(oar_dir)}
    assert [got[i]["array_index"] for i in ids] == [1, 2, 3] and {got[i]["array_id"] for i in ids} == {int(ids[0])}
    assert records(real_oar, wide)[wide]["assigned_resources"].__len__() == 2
    assert adapter.details(single)["state"] == "Terminated"


def test_oardel_kills_a_running_job_and_hold_keeps_a_waiting_one(adapter, real_oar, oar_dir):
    """A job holding every core keeps the next one Waiting: it is held (oarhold), and stays held when the cores
    are free (a later job runs past it); cancelled (oardel), the running one ends in Error, a kill cigri reads as
    the admin's; resumed (oarresume), the held one runs."""
    key = unique("cigri.real.2.b.")
    (blocker,) = adapter.submit(key + "a", [spec(1, oar_dir, "blocker", "sleep:300", resources="/core=4")])
    wait_states(adapter, [blocker], in_state(RemoteState.RUNNING))
    (held,) = adapter.submit(key + "h", [spec(2, oar_dir, "held")])
    assert oar_state(real_oar, held) == "Waiting"  # every core is the blocker's
    assert adapter.states([held])[held].state == RemoteState.PENDING
    adapter.hold([held])
    wait_oar(real_oar, held, "Hold")  # oarhold sends the request: the state follows
    adapter.cancel([blocker])
    states, _ = wait_states(adapter, [blocker], all_ended)
    assert (states[blocker].state, states[blocker].cause) == (RemoteState.KILLED, KillCause.ADMIN)
    assert states[blocker].reason == "killed by OAR (FRAG_JOB_REQUEST)"
    events = [e["type"] for e in records(real_oar, blocker)[blocker]["events"]]
    assert sorted(events) == ["FRAG_JOB_REQUEST", "SEND_KILL_JOB", "SWITCH_INTO_ERROR_STATE"]  # in no set order
    (later,) = adapter.submit(key + "l", [spec(3, oar_dir, "later")])
    wait_states(adapter, [later], all_ended)
    assert adapter.states([held])[held].state == RemoteState.PENDING and oar_state(real_oar, held) == "Hold"
    adapter.hold([held])  # held already: OAR refuses, nothing to do
    adapter.release([held])
    states, _ = wait_states(adapter, [held], all_ended)
    assert (states[held].state, states[held].exit_code) == (RemoteState.EXITED, 0)
    adapter.release([held])  # over: OAR refuses, nothing to do
    adapter.cancel([held])  # over: nothing to cancel


def test_best_effort_walltime_and_checkpoint_kills(adapter, real_oar, oar_dir):
    """Best-effort jobs are killed for a normal job's cores (preempted); a job past its walltime is killed
    (walltime); a checkpointing job gets its signal before its walltime and ends well."""
    key = unique("cigri.real.3.b.")
    be = adapter.submit(key + "be", [spec(i, oar_dir, f"be{i}", "sleep:300", best_effort=True) for i in (1, 2)])
    (late,) = adapter.submit(key + "w", [spec(3, oar_dir, "late", "sleep:300", walltime=10)])
    (saved,) = adapter.submit(
        key + "c",
        [spec(4, oar_dir, "saved", "checkpoint", walltime=70, checkpoint_signal="USR2", checkpoint_grace=60)],
    )
    assert {records(real_oar, i)[i]["queue"] for i in be} == {"besteffort"}
    wait_states(adapter, be, in_state(RemoteState.RUNNING))
    normal = as_user(
        real_oar, "oarsub", "-n", key + "normal", "-O", "/dev/null", "-E", "/dev/null", "-l", "core=4", "true"
    )
    assert normal.returncode == 0, normal.stderr
    states, _ = wait_states(adapter, [*be, late, saved], all_ended)
    assert [(states[i].state, states[i].cause) for i in be] == [(RemoteState.KILLED, KillCause.PREEMPTED)] * 2
    assert (states[late].state, states[late].cause) == (RemoteState.KILLED, KillCause.WALLTIME)
    assert (states[saved].state, states[saved].exit_code) == (RemoteState.EXITED, 0)
    assert (oar_dir / "saved.checkpoint").read_text() == "checkpointed\n"
    got = records(real_oar, *be, late, saved)
    assert all("BESTEFFORT_KILL" in [e["type"] for e in got[i]["events"]] for i in be)
    assert "WALLTIME" in [e["type"] for e in got[late]["events"]]
    assert {"CHECKPOINT", "CHECKPOINT_SUCCESSFULL"} <= {e["type"] for e in got[saved]["events"]}


def test_a_stressed_api_closes_the_queue_but_its_jobs_are_polled(real_oar, tmp_path):
    """GET stress_factor (here answering what OAR_STRESS_FILE holds): at 0.8 cigri queues nothing there."""
    made = OarRest(Cluster("oar", "oar-rest", rest_config(real_oar)), AdapterContext(tmp_path, RealClock()))
    stress = Path(real_oar["OAR_STRESS_FILE"])
    try:
        stress.write_text("0.9\n")
        capacity = made.capacity()
        assert (made.stressed, made.queue_depth, capacity.used) == (True, 0, capacity.total)
        stress.write_text("0.1\n")
        capacity = made.capacity()
        assert (made.stressed, made.queue_depth, capacity.total) == (False, 100, int(real_oar["OAR_CORES"]))
    finally:
        stress.unlink(missing_ok=True)
        made.close()


# ---- whole campaigns through the CLI ------------------------------------------------------------------------


def add_cluster(cli, adapter_name: str, env: dict[str, str], folder: Path, *extra: str) -> None:
    options = ssh_options(env, folder / ".cigri") if adapter_name == "oar-ssh" else rest_options(env)
    cli("gridclusters", "add", "oar", "--adapter", adapter_name, *options, *extra)


@pytest.mark.parametrize("adapter_name", ADAPTERS)
def test_a_campaign_through_gridsub_and_almighty(cli, real_oar, oar_dir, adapter_name):
    """gridsub then almighty --until-done: every job ran once by OAR's records, with its words; gridstat -C gives
    OAR's record of a job; grid doctor finds the cluster well."""
    add_cluster(cli, adapter_name, real_oar, oar_dir)
    job_script(oar_dir)
    names = [f"c{i}" for i in range(5)]
    cid = cli.submit(
        write_jdl(
            oar_dir,
            exec_file=str(oar_dir / "job.sh"),
            exec_directory=str(oar_dir),
            params=[shlex.join([name, "ok", *NASTY]) for name in names],
            clusters={"oar": {"resources": "/core=1", "project": "cigri-campaign"}},
            environment={"SECRET_TOKEN": "s3cr$t `x`"},
        )
    )
    cli.until_done(timeout=240)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"], row["failed"]) == ("terminated", 5, 5, 0)
    jobs = cli.json("gridstat", "-c", str(cid), "-f")
    remote = records(real_oar, *(job["remote_id"] for job in jobs))
    assert len(remote) == 5 and {job["state"] for job in remote.values()} == {"Terminated"}
    assert {job["project"] for job in remote.values()} == {"cigri-campaign"}
    words = "".join(f"[{word}]" for word in NASTY)
    assert [(oar_dir / f"{name}.words").read_text() for name in names] == [words] * 5
    assert not list(oar_dir.glob("pwned*"))
    detail = cli.json("gridstat", "-j", str(jobs[0]["id"]), "-C")
    assert "Terminated" in str(detail)
    doctor = cli("doctor")
    assert "FIX" not in doctor
    if adapter_name == "oar-rest":
        assert "OAR 2.5.9 (Canicule), API 1.0.2" in doctor


READER = """#!/bin/sh
# NAME CHUNK: checksum of its chunk and of the shared file (from CIGRI_INPUT_DIR) into out_NAME.txt
cat "$CIGRI_INPUT_DIR/chunk_$2.dat" "$CIGRI_INPUT_DIR/common.dat" | sha256sum | cut -d' ' -f1 > "out_$1.txt"
"""


def test_an_oar_ssh_campaign_stages_inputs_and_gathers_outputs(cli, real_oar, oar_dir, tmp_path):
    """oar-ssh moves files through ssh as the OAR user: inputs into the cluster's cache, outputs back, checked."""
    data = tmp_path / "data"
    data.mkdir()
    for i in range(2):
        (data / f"chunk_{i}.dat").write_bytes(bytes(range(256)) * (30 + i))
    (data / "common.dat").write_bytes(b"\0shared\n" * 40)
    reader = oar_dir / "reader.sh"
    reader.write_text(READER)
    reader.chmod(0o755)
    work = oar_dir / "work"
    work.mkdir()
    shutil.chown(work, real_oar["OAR_USER"], real_oar["OAR_USER"])
    add_cluster(cli, "oar-ssh", real_oar, oar_dir, "--cache-dir", str(oar_dir / "cache"))
    cid = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(reader),
            exec_directory=str(work),
            params=["a 0", "b 1", "c 0"],
            data_source=str(data),
            input_files=["chunk_{2}.dat", "common.dat"],
            output_file="out_{1}.txt",
            output_destination=str(tmp_path / "results"),
            clusters={"oar": {}},
        )
    )
    cli.until_done(timeout=240)
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated" and cli.json("gridevents", "-a") == []
    for name, chunk in (("a", 0), ("b", 1), ("c", 0)):
        both = (data / f"chunk_{chunk}.dat").read_bytes() + (data / "common.dat").read_bytes()
        gathered = tmp_path / "results" / name / f"out_{name}.txt"
        assert gathered.read_text().strip() == hashlib.sha256(both).hexdigest()
    assert [p for p in (oar_dir / "cache").rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("adapter_name", ADAPTERS)
def test_what_a_campaign_leaves_in_the_users_home(cli, real_oar, oar_dir, adapter_name, tmp_path):
    """A campaign run from the OAR user's home (exec_directory ~, cigri's folder ~/.cigri): OAR writes each
    job's OAR.<name>.<id>.stdout and .stderr there; cigri leaves its batch files in ~/.cigri (oar-ssh: the
    param file, oarsub's answer and the environment file; oar-rest: the environment file), which nothing
    removes. (The oar_dir fixture cleans the home afterwards.)"""
    home = Path(real_oar["OAR_HOME"])
    before = set(home.iterdir())
    script = oar_dir / "hello.sh"
    script.write_text("#!/bin/sh\necho ran $1\n")
    script.chmod(0o755)
    add_cluster(cli, adapter_name, real_oar, home)  # oar-ssh's remote_dir: ~/.cigri, its default
    cid = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(script),
            exec_directory="~",
            params=["h1", "h2"],
            clusters={"oar": {}},
            environment={"K": "v"},
        )
    )
    cli.until_done(timeout=180)
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    jobs = cli.json("gridstat", "-c", str(cid), "-f")
    got = records(real_oar, *(job["remote_id"] for job in jobs))
    outputs = [f"OAR.{got[i]['name']}.{i}.{stream}" for i in got for stream in ("stderr", "stdout")]
    assert sorted(path.name for path in set(home.iterdir()) - before) == sorted([*outputs, ".cigri"])
    assert sorted((home / name).read_text() for name in outputs) == ["", "", "ran h1\n", "ran h2\n"]
    kept = Counter(path.suffix for path in (home / ".cigri").iterdir())
    assert kept == (
        Counter({".params": 1, ".ids": 1, ".env": 1}) if adapter_name == "oar-ssh" else Counter({".env": 1})
    )
