"""slurm-ssh against the real local Slurm: jobs run as the unprivileged user, through ssh."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import pytest

from cigri.adapters import AdapterContext
from cigri.adapters.slurm import SlurmSsh
from cigri.adapters.transport import TIMEOUT, runner_for
from cigri.clock import RealClock
from cigri.errors import TransportError
from cigri.model import Cluster, JobSpec, RemoteState
from cigri.store import Store

from .conftest import wait_for, write_jdl
from .slurm import job_script, runs, ssh_cluster_options, ssh_config
from .test_secrets_argv import ArgvWatch, Recording, secret_environment, shows_a_secret

pytestmark = pytest.mark.slurm


@pytest.fixture
def cluster(cli, slurm, shared_dir):
    cli("gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    return "slurm"


def campaign(cli, folder, params, **fields):
    script = job_script(folder)
    fields.setdefault("clusters", {"slurm": {}})
    return cli.submit(write_jdl(folder, exec_file=str(script), exec_directory=str(folder), params=params, **fields))


def test_a_200_job_campaign_completes_as_the_unprivileged_user(cli, cluster, shared_dir):
    params = [f"j{i:03d} 'x; rm -rf ~' '$(touch pwned)' '*'" for i in range(200)]
    stages = shared_dir / "stages.log"
    cid = campaign(
        cli,
        shared_dir,
        params,
        prologue=[f"echo prologue $(id -un) >> {stages}"],
        epilogue=[f"echo epilogue {{CAMPAIGN_ID}} >> {stages}"],
    )
    cli.until_done(timeout=300)
    assert stages.read_text().splitlines() == ["prologue cigritest", f"epilogue {cid}"]  # once each
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", 200, 200)
    lines = runs(shared_dir)
    assert sorted(line.split()[0] for line in lines) == [f"j{i:03d}" for i in range(200)]  # each once
    assert set(line.split(" ", 1)[1] for line in lines) == {"[x; rm -rf ~] [$(touch pwned)] [*]"}
    assert not (shared_dir / "pwned").exists()
    assert cli("gridstat", "-j", "1", "-O").strip() == "ok j000 as cigritest"


def test_an_array_partly_failing_gives_events_with_stderr(cli, cluster, shared_dir):
    cli("config", "set", "blacklist.errors", "1")  # CiGri's rule: the first error closes the cluster
    cid = campaign(cli, shared_dir, [f"ok{i}" for i in range(4)] + ["bad1 fail", "bad2 fail"])
    cli.until_done(timeout=120, code=13)  # an open event blocks the campaign
    events = cli.json("gridevents", "-c", str(cid), "-e", "EXIT_ERROR")
    assert len(events) == 2
    [blacklist] = cli.json("gridevents", "-c", str(cid), "-e", "BLACKLIST")  # the second one joined it
    assert blacklist["parent_id"] == events[0]["id"] and events[1]["parent_id"] == blacklist["id"]
    assert all("exited with status 3" in e["message"] and "failing on purpose: bad" in e["message"] for e in events)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["failed"], row["blocked"] is not None) == (4, 2, True)


def test_a_job_cancelled_from_outside_cigri_is_resubmitted(cli, cluster, shared_dir, state):
    cid = campaign(cli, shared_dir, ["victim slow-once 120"])
    cli("almighty")
    job = wait_for(
        lambda: (
            (cli("almighty"), cli.json("gridstat", "-j", "1"))[1]["state"] == "running"
            and cli.json("gridstat", "-j", "1")
        ),
        timeout=60,
    )
    subprocess.run(["scancel", job["remote_id"]], check=True)  # the admin, not cigri
    cli.until_done(timeout=120)
    assert runs(shared_dir) == ["victim [slow-once] [120]"] * 2
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"]) == ("terminated", 1)
    assert cli.json("gridstat", "-j", "1")["resubmits"] == 1


def test_a_walltime_overrun_is_killed_by_slurm_and_resubmitted(cli, cluster, shared_dir):
    # Slurm kills in whole minutes: one such test only
    cid = campaign(cli, shared_dir, ["long slow-once 150"], walltime="00:01:00")
    cli.until_done(timeout=240)
    assert runs(shared_dir) == ["long [slow-once] [150]"] * 2
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"


def test_a_stopped_controller_is_a_cluster_event_and_nothing_is_lost(cli, cluster, shared_dir, slurm):
    cid = campaign(cli, shared_dir, [f"s{i} sleep 1" for i in range(12)])
    cli("almighty")
    os.kill(int(Path("/run/slurm/slurmctld.pid").read_text()), signal.SIGTERM)  # this daemon, by its pid
    wait_for(lambda: "UP" not in subprocess.run(["scontrol", "ping"], capture_output=True, text=True).stdout)
    cli("almighty")
    [event] = [e for e in cli.json("gridevents", "-a") if e["class"] == "cluster"]
    assert event["code"] == "CLUSTER_UNREACHABLE" and event["cluster"] == "slurm"
    assert "Unable to contact slurm controller" in event["message"]
    problem = {c["name"]: c for c in cli.json("gridclusters")}["slurm"]
    assert problem["problem"]
    subprocess.run(["scripts/slurm-local.sh", "start"], check=True, capture_output=True)
    cli.until_done(timeout=180)
    assert Counter(line.split()[0] for line in runs(shared_dir)) == {f"s{i}": 1 for i in range(12)}
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    assert [e["state"] for e in cli.json("gridevents", "-a") if e["class"] == "cluster"] == ["closed"]


def test_a_refused_ssh_key_is_a_clear_cluster_event(cli, slurm, shared_dir, tmp_path):
    key = tmp_path / "wrong_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    options = ssh_cluster_options({**slurm, "SSH_KEY": str(key)}, shared_dir / "cigri")
    cli("gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *options)
    campaign(cli, shared_dir, ["never"])
    out = cli("almighty")
    assert "Traceback" not in out
    [event] = cli.json("gridevents", "-a")
    assert event["class"] == "cluster" and "Permission denied (publickey)" in event["message"]
    assert cli.json("gridstat", "-j", "1")["state"] == "to_launch"  # nothing lost, nothing sent


def test_unsupported_properties_are_a_jdl_error_for_that_cluster(cli, cluster, shared_dir):
    script = job_script(shared_dir)
    jdl = write_jdl(shared_dir, exec_file=str(script), params=["a"], clusters={"slurm": {"properties": "mem > 4"}})
    out = cli("gridsub", str(jdl), code=3)
    assert "clusters.slurm.properties: Slurm takes properties of the form name='value'" in out


def test_a_submission_slurm_rejects_blocks_that_cluster_for_that_campaign_only(cli, cluster, shared_dir):
    bad = campaign(cli, shared_dir, ["b1", "b2"], clusters={"slurm": {"properties": "feature='no-such-feature'"}})
    good = campaign(cli, shared_dir, ["g1", "g2"])
    out = cli.until_done(timeout=120, code=13)  # an open event blocks the campaign
    [event] = cli.json("gridevents", "-c", str(bad))
    assert (event["class"], event["code"], event["cluster"]) == ("campaign", "SUBMIT_ERROR", "slurm")
    assert "Invalid feature specification" in event["message"]
    assert f"campaign {bad} is blocked" in out
    assert cli.json("gridstat", "-c", str(bad))["waiting"] == 2  # nothing lost: the jobs wait for the user
    assert cli.json("gridstat", "-c", str(good))["state"] == "terminated"


def test_a_refused_submission_shows_none_of_the_jobs_environment(cli, cluster, shared_dir):
    environment = secret_environment()
    bad = campaign(
        cli,
        shared_dir,
        ["b1"],
        environment=environment,
        clusters={"slurm": {"properties": "feature='no-such-feature'"}},
    )
    out = cli.until_done(timeout=60, code=13)  # an open event blocks the campaign
    [event] = cli.json("gridevents", "-c", str(bad), "-a")
    assert event["code"] == "SUBMIT_ERROR" and "Invalid feature specification" in event["message"]
    shown = out + cli("gridevents", "-a", "--json") + cli("gridclusters", "-i", "slurm")
    assert not shows_a_secret(shown, environment) and "hunter2" not in shown and "k3y" not in shown


def test_a_jobs_environment_reaches_it_through_no_command_line(slurm, shared_dir, tmp_path):
    """The values of a job's environment, on their way through ssh, sh and sbatch to the job, are in no
    process's argv (what ps shows every user) and in no argv the transport is given."""
    dump = shared_dir / "dump.sh"
    dump.write_text(f'#!/bin/sh\nenv -0 > "{shared_dir}/env.$1"\n')
    dump.chmod(0o755)
    config = ssh_config(slurm, shared_dir / "spool")
    runner = Recording(runner_for(config))
    adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", config), AdapterContext(tmp_path, RealClock()), runner=runner)
    environment = secret_environment()
    specs = [
        JobSpec(i, 7, f"j{i}", (str(dump), f"j{i}"), str(shared_dir), 60, resources="core=1", env=environment)
        for i in (1, 2)
    ]
    ids: list[str] = []
    try:
        with ArgvWatch(environment) as watch:
            ids = adapter.submit(f"cigri.envtest-{uuid.uuid4().hex[:8]}.b.1", specs)
            wait_for(lambda: {s.state for s in adapter.states(ids).values()} == {RemoteState.EXITED}, timeout=60)
    finally:
        adapter.cancel(ids)
        adapter.close()
    for name in ("j1", "j2"):
        text = (shared_dir / f"env.{name}").read_text()
        got = dict(item.split("=", 1) for item in text.split("\0") if item)
        assert {key: got[key] for key in environment} == environment
    assert not watch.leaks, watch.leaks
    assert any(line.startswith("ssh ") and slurm["SSH_HOST"] in line for line in watch.seen)  # it saw the submission
    assert not any(shows_a_secret(" ".join(argv), environment) for argv, _ in runner.calls)
    assert not (shared_dir / "pwned").exists()


def pending_tasks(state: Path) -> list[str]:
    """The Slurm ids of this state's array tasks that wait in the queue (named after its batch keys)."""
    store = Store(state)
    prefix = f"cigri.{store.instance}."
    store.close()
    listing = subprocess.run(["squeue", "-h", "-r", "-t", "PD", "-o", "%A %j"], capture_output=True, text=True)
    return [line.split()[0] for line in listing.stdout.splitlines() if line.split()[-1].startswith(prefix)]


def test_preempted_best_effort_jobs_are_requeued_and_complete(cli, cluster, shared_dir, slurm, state):
    # JDL type defaults to best-effort (CiGri's default): the cluster sends such jobs to its preemptible partition
    cid = campaign(cli, shared_dir, [f"p{i} slow-once 60" for i in range(8)])
    wait_for(lambda: (cli("almighty"), cli.json("gridstat", "-c", str(cid)))[1]["running"] == 8, timeout=60)
    blocker = subprocess.run(
        [
            "runuser",
            "-u",
            slurm["SLURM_TEST_USER"],
            "--",
            "sbatch",
            "--parsable",
            f"--partition={slurm['SLURM_PARTITION']}",
            "--ntasks=8",
            "--job-name=preemptor",
            "--output=/dev/null",
            "--wrap",
            "sleep 1",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd="/tmp",
    )
    try:
        # Slurm holds a requeued job for AuthInfo's cred_expire (120 s by default) before it may start again,
        # a timer cigri has no part in: as the cluster's administrator, the test lets the eight start now
        for task in wait_for(lambda: len(tasks := pending_tasks(state)) == 8 and tasks, timeout=60):
            subprocess.run(["scontrol", "update", f"JobId={task}", "StartTime=now"], check=True)
        cli.until_done(timeout=180)
    finally:
        subprocess.run(["scancel", blocker.stdout.strip()], check=False)
    assert Counter(line.split()[0] for line in runs(shared_dir)) == {f"p{i}": 2 for i in range(8)}
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"


def test_without_a_host_slurm_ssh_runs_the_commands_here(cli, slurm, shared_dir):
    """On a login node: the same adapter with the local transport (jobs run as cigri's own user)."""
    cli(
        "gridclusters",
        "add",
        "login",
        "--adapter",
        "slurm-ssh",
        "--partition",
        slurm["SLURM_PARTITION"],
        "--accounting",
        "none",
        "--remote-dir",
        str(shared_dir / "spool"),
    )
    cid = campaign(cli, shared_dir, [f"l{i} 'a b'" for i in range(5)], clusters={"login": {}})
    cli.until_done(timeout=120)
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    assert sorted(runs(shared_dir)) == [f"l{i} [a b]" for i in range(5)]


def test_activity_changes_once_a_job_ends(slurm, shared_dir, tmp_path):
    config = ssh_config(slurm, shared_dir / "spool")
    adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", config), AdapterContext(tmp_path, RealClock()))
    job = JobSpec(1, 1, "j1", ("sleep", "2"), str(shared_dir), 60, resources="core=1")
    ids = adapter.submit(f"cigri.activitytest-{uuid.uuid4().hex[:8]}.b.1", [job])
    try:
        token = adapter.activity()
        wait_for(lambda: adapter.activity() != token, timeout=30, interval=0.05)
        assert adapter.states(ids)[ids[0]].state == RemoteState.EXITED
    finally:
        adapter.cancel(ids)
        adapter.close()


def test_an_absent_slurmctld_is_a_transport_error_saying_so_within_the_timeout(slurm, tmp_path, monkeypatch):
    """Slurm's commands, given a controller port where nothing listens, retry for MessageTimeout (~9 s
    measured) then say "Unable to contact slurm controller": within cigri's default timeout, so the
    cluster event carries Slurm's own words."""
    conf = tmp_path / "slurm.conf"
    lines = Path("/etc/slurm/slurm.conf").read_text().splitlines()
    conf.write_text("\n".join(["SlurmctldPort=1", *lines]) + "\n")  # nothing listens on port 1
    monkeypatch.setenv("SLURM_CONF", str(conf))
    adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", {"accounting": "none"}), AdapterContext(tmp_path, RealClock()))
    assert adapter.runner.timeout == TIMEOUT
    with pytest.raises(TransportError, match=r"^slurm: .* Unable to contact slurm controller \(connect failure\)$"):
        adapter.capacity()


def test_a_file_servers_load_is_read_through_the_clusters_ssh_transport(slurm, tmp_path):
    """The ssh host is this machine: its /proc/loadavg, read over ssh, is this machine's load; a host the
    login node cannot reach is a TransportError naming the cluster and the host."""
    config = {
        "host": slurm["SSH_HOST"],
        "port": int(slurm["SSH_PORT"]),
        "user": slurm["SLURM_TEST_USER"],
        "identity_file": slurm["SSH_KEY"],
        "accounting": "none",
    }
    adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", config), AdapterContext(tmp_path, RealClock()))
    try:
        before = os.getloadavg()[0]
        load = adapter.server_load("localhost")
        after = os.getloadavg()[0]
        assert min(before, after) - 0.01 <= load <= max(before, after) + 0.01  # /proc/loadavg has 2 decimals
        with pytest.raises(TransportError, match=r"^slurm: cannot read the load of no-such-host\.invalid: "):
            adapter.server_load("no-such-host.invalid")
    finally:
        adapter.close()


def test_a_cluster_unreachable_too_long_has_its_jobs_rerun_elsewhere_and_the_copies_that_lost_killed(
    cli, cluster, shared_dir, slurm
):
    cli("gridevents", "--blacklist-cluster", "local")  # the jobs start on slurm
    params = [f"u{i} slow-once 300" for i in range(3)]  # the first run sleeps; a second one ends at once
    cid = campaign(cli, shared_dir, params, clusters={"slurm": {}, "local": {}})
    wait_for(lambda: (cli("almighty"), len(runs(shared_dir)) == 3)[1], timeout=60)
    remote = [job["remote_id"] for job in cli.json("gridstat", "-c", str(cid), "-f")]
    cli("config", "set", "updator.unreachable", "0")
    cli("gridclusters", "set", "slurm", "--port", "1")  # unreachable through its own configuration
    cli("gridevents", "--unblacklist", "local")
    cli("almighty")  # slurm does not answer: an event; the next pass runs its jobs here
    [event] = cli.json("gridevents", "-g")
    assert (event["code"], event["cluster"]) == ("CLUSTER_UNREACHABLE", "slurm")
    cli.until_done(timeout=60)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["ended"], row["waste"]) == ("terminated", 3, 3, 0)
    assert {job["cluster"] for job in cli.json("gridstat", "-c", str(cid), "-f")} == {"local"}
    assert squeue(remote) == remote, "the copies there still run: nothing could reach them"
    cli("gridclusters", "set", "slurm", "--port", slurm["SSH_PORT"])
    cli("almighty")  # slurm answers: its event closes, the copies that lost are killed and counted
    wait_for(lambda: not squeue(remote), timeout=30)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["ended"], row["waste"]) == (3, 3, 3)  # each result kept once; 3 copies wasted
    [closed] = cli.json("gridevents", "-g", "-a", "-e", "CLUSTER_UNREACHABLE")
    assert (closed["state"], closed["closed_by"]) == ("closed", "auto-fixed: the cluster answers again")
    assert Counter(line.split()[0] for line in runs(shared_dir)) == {f"u{i}": 2 for i in range(3)}


def squeue(remote_ids: list[str]) -> list[str]:
    """Those of ``remote_ids`` Slurm still has pending, running or completing."""
    out = subprocess.run(["squeue", "-h", "-o", "%i", "-t", "PD,R,CG", "-j", ",".join(remote_ids)], capture_output=True)
    return sorted(set(out.stdout.decode().split()) & set(remote_ids), key=remote_ids.index)
