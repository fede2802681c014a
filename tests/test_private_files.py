"""What cigri writes is private: state, logs, spools and sockets 0600/0700, whatever the umask; node files
in cigri's own folder on the cluster."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from cigri.adapters import AdapterContext, adapter_for, oar_rest, slurm_rest
from cigri.adapters.local_rm import Spool
from cigri.adapters.slurm import args_lines, job_script
from cigri.clock import RealClock
from cigri.errors import ConfigError
from cigri.model import Cluster, JobSpec

from .conftest import Grid, wait_for, write_jdl
from .test_cli_errors import refuse


def stop_local_daemons(state_dir: Path) -> None:
    for spool in (state_dir / "clusters").glob("*"):
        if (spool / "rm.db").exists():
            local = Spool(spool)
            local.stop_daemon()
            local.close()


def slurm_task(tmp_path: Path, argv: tuple[str, ...]) -> tuple[str, dict, Path, Path]:
    """The array job script of one task running ``argv``, the environment slurmd gives task 1 of array 7,
    cigri's folder for its node files and the node's TMPDIR (both empty)."""
    spec = JobSpec(job_id=3, campaign_id=1, name="j3", argv=argv, directory=str(tmp_path), walltime=60, user="a")
    (tmp_path / "args").write_text(args_lines([spec], str(tmp_path)))
    folder, node_tmp = tmp_path / "cigri", tmp_path / "tmp"
    folder.mkdir()
    node_tmp.mkdir()
    script = job_script(spec, str(tmp_path), f"cat {tmp_path / 'args'}", f"{folder}/")
    env = {
        "PATH": os.environ["PATH"],
        "TMPDIR": str(node_tmp),
        "SLURM_ARRAY_JOB_ID": "7",
        "SLURM_ARRAY_TASK_ID": "1",
        "SLURM_JOB_ID": "8",
        "SLURM_JOB_NODELIST": "node[1-2]",
    }
    return script, env, folder, node_tmp


def test_a_slurm_job_node_file_is_private_in_cigris_folder_and_removed_at_its_end(tmp_path):
    """The node file is named after the task, in cigri's own folder on the cluster (0700), not in the node's
    /tmp: no name there to plant a symlink on, and nothing left in /tmp however the job ends."""
    argv = ("sh", "-c", 'cat "$CIGRI_NODE_FILE"; echo "$CIGRI_NODE_FILE"; stat -c %a "$CIGRI_NODE_FILE"')
    script, env, folder, node_tmp = slurm_task(tmp_path, argv)
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["node1", "node2", f"{folder}/7_1.nodes", "600"]
    assert list(folder.iterdir()) == [] and list(node_tmp.iterdir()) == []  # removed once the job ended


def test_a_slurm_job_cancelled_as_it_starts_leaves_no_node_file(tmp_path):
    """Slurm's SIGTERM may reach the batch shell while it writes the node file (scontrol runs then): the
    shell already traps it, so it exits 143 and removes the file."""
    script, env, folder, node_tmp = slurm_task(tmp_path, ("true",))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"  # the cancel reaches every process of the task while scontrol lists the nodes
    scontrol.write_text("#!/bin/sh\nkill -TERM 0\necho node1\n")
    scontrol.chmod(0o755)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, start_new_session=True)
    assert done.returncode == 143, done.stderr
    assert list(folder.iterdir()) == [] and list(node_tmp.iterdir()) == []


def test_a_slurm_job_killed_outright_leaves_nothing_in_the_nodes_tmp(tmp_path):
    """No trap runs on SIGKILL, which Slurm sends on preemption, after KillWait or on ``scancel -s KILL``
    (CI saw the old /tmp node file left so): the file left is in cigri's folder, beside the task's output,
    where the next run of the same task overwrites it."""
    started = tmp_path / "started"
    script, env, folder, node_tmp = slurm_task(tmp_path, ("sh", "-c", f"touch {started}; exec sleep 60"))
    shell = subprocess.Popen(["sh", "-c", script], env=env, start_new_session=True)
    try:
        wait_for(started.exists, timeout=20, interval=0.05)
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()
    assert list(node_tmp.iterdir()) == []
    assert [p.name for p in folder.iterdir()] == ["7_1.nodes"]


# ---- tokens never cross the network over plain http:// ---------------------------------------------


def rest_options(tmp_path: Path, url: str) -> list[str]:
    token = tmp_path / "token"
    token.write_text("SLURM_JWT=x.y.z\n")
    return ["--adapter", "slurm-rest", "--url", url, "--user", "alice", "--token-file", str(token), "--home", "/h"]


def test_a_token_over_plain_http_to_another_host_is_refused_at_add_and_set(cli, tmp_path):
    cli("gridstat")  # the state file exists: refuse() checks that nothing changes
    plain = "http://slurm.example:6820"
    refuse(
        cli.state,
        ["gridclusters", "add", "far", *rest_options(tmp_path, plain)],
        4,
        "'far'",
        "plain http",
        "--insecure",
    )
    cli("gridclusters", "add", "far", *rest_options(tmp_path, "https://slurm.example:6820"))
    refuse(cli.state, ["gridclusters", "set", "far", "--url", plain], 4, "plain http")
    bearer = ["--adapter", "oar-rest", "--url", "http://oar.example/oarapi", "--auth", "bearer", "--token-file", "t"]
    refuse(cli.state, ["gridclusters", "add", "oar", *bearer], 4, "'oar'", "plain http")


def test_plain_http_is_accepted_to_this_machine_without_a_token_or_with_insecure(cli, tmp_path):
    for number, host in enumerate(("127.0.0.1", "[::1]", "localhost")):
        cli("gridclusters", "add", f"here{number}", *rest_options(tmp_path, f"http://{host}:6820"))
    cli("gridclusters", "add", "oar", "--adapter", "oar-rest", "--url", "http://oar.example/oarapi")  # ident: no token
    cli("gridclusters", "add", "far", *rest_options(tmp_path, "http://slurm.example:6820"), "--insecure")
    cli("gridclusters", "set", "far", "--no-insecure", code=4)  # would send the token in clear again


@pytest.mark.parametrize("adapter", ["slurm-rest", "oar-rest"])
def test_an_adapter_refuses_a_plain_http_token_recorded_before_the_check(tmp_path, adapter):
    config = {"url": "http://far.example:6820", "user": "alice", "token_file": "t", "auth": "bearer"}
    with pytest.raises(ConfigError, match="plain http"):
        adapter_for(Cluster("far", adapter, config), AdapterContext(tmp_path, RealClock()))
    assert adapter_for(Cluster("far", adapter, {**config, "insecure": True}), AdapterContext(tmp_path, RealClock()))


# ---- what a real run leaves is private, whatever the umask ----------------------------------------------


def test_a_real_run_leaves_only_private_state_logs_and_spools(tmp_path):
    old = os.umask(0o002)  # a permissive umask: group- and world-readable files unless cigri says otherwise
    try:
        cli = Grid(tmp_path / "fresh" / "state" / "state.db")  # no folder yet: cigri makes it
        jdl = write_jdl(tmp_path, exec_file="/bin/echo", params=["a", "b"])
        cli.submit(jdl)
        cli("almighty", "--until-done", "--period", "0.5", "--timeout", "60")  # writes almighty.log
        state = cli.state.parent
        modes = {str(p.relative_to(state)): p.stat().st_mode & 0o777 for p in [state, *state.rglob("*")]}
    finally:
        os.umask(old)
        stop_local_daemons(tmp_path / "fresh" / "state")
    assert {
        "almighty.log",
        "state.db",
        "clusters",
        "clusters/local",
        "clusters/local/rm.db",
        "clusters/local/out",
    } <= set(modes)
    assert any(name.startswith("clusters/local/out/") for name in modes)  # the jobs' outputs
    wide = {name: oct(mode) for name, mode in modes.items() if mode not in (0o600, 0o700)}
    assert not wide, wide
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o700  # the folders cigri made to reach it


@pytest.mark.parametrize(("adapter", "token"), [("slurm-rest", "SLURM_JWT=x.y.z\n"), ("oar-rest", "tok\n")])
def test_a_token_file_others_may_read_is_used_with_a_warning(tmp_path, caplog, adapter, token):
    read = slurm_rest.read_token if adapter == "slurm-rest" else oar_rest.read_token
    path = tmp_path / "token"
    path.write_text(token)
    path.chmod(0o600)
    read(str(path))
    assert not caplog.records
    path.chmod(0o644)
    assert read(str(path)) in ("x.y.z", "tok")
    assert [r.getMessage() for r in caplog.records] == [
        f"token_file {path} is readable by others (mode 644): chmod 600 {path}"
    ]
