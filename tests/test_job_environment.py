"""The environment of a job: a defined login-like base (not the environment that started the local daemon),
the JDL's ``environment:`` map, then the CIGRI_* variables, with CIGRI_USER the campaign's owner."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path

import httpx
import pytest

from cigri import campaigns
from cigri.adapters.slurm import args_lines, job_script
from cigri.clock import RealClock
from cigri.errors import JdlError
from cigri.jdl import load, parse
from cigri.model import JobSpec
from cigri.store import Store

from .conftest import write_jdl
from .oar.server import through_oarapi
from .test_cli_errors import refuse
from .test_oar_adapters import mocked, record

LOGIN = {"HOME", "USER", "LOGNAME", "SHELL", "PATH", "LANG"}


def dump_env(directory: Path) -> Path:
    script = directory / "env.sh"
    script.write_text(f'#!/bin/sh\nenv -0 > "{directory}/env.$1"\n')
    script.chmod(0o755)
    return script


def job_env(directory: Path, name: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in (directory / f"env.{name}").read_text().split("\0") if item)


def test_a_local_job_of_another_users_campaign_gets_a_login_environment_the_map_and_cigri_user(
    cli, state, tmp_path, monkeypatch
):
    monkeypatch.setenv("LEAKED_FROM_THE_DAEMON", "secret")  # the local daemon starts from this process
    environment = {"GREETING": "hello world", "EMPTY": "", "PATH": "/opt/tool/bin:/usr/bin:/bin"}
    jdl = write_jdl(tmp_path, exec_file=str(dump_env(tmp_path)), params=["a"], environment=environment)
    store = Store(state)
    campaigns.submit(store, load(jdl), RealClock(), user="alice")  # alice's campaign, run by this user
    store.close()
    cli.until_done()
    env = job_env(tmp_path, "a")
    me = pwd.getpwuid(os.geteuid())
    assert "LEAKED_FROM_THE_DAEMON" not in env
    assert {k for k in env if not k.startswith("CIGRI_")} - {"PWD", "SHLVL", "_"} == LOGIN | {"GREETING", "EMPTY"}
    assert (env["USER"], env["LOGNAME"], env["HOME"]) == (me.pw_name, me.pw_name, os.path.expanduser("~"))
    assert env["GREETING"] == "hello world" and env["EMPTY"] == "" and env["PATH"] == "/opt/tool/bin:/usr/bin:/bin"
    assert env["CIGRI_USER"] == "alice" and env["LANG"] == "C.UTF-8"


@pytest.mark.parametrize(
    ("environment", "path", "words"),
    [
        (["A=1"], "clusters.local.environment", "expected a mapping of variable names to values"),
        ({"1BAD": "x"}, "clusters.local.environment.1BAD", "not a variable name"),
        ({"A-B": "x"}, "clusters.local.environment.A-B", "not a variable name"),
        ({"N": 3}, "clusters.local.environment.N", "expected a string, not int"),
        ({"CIGRI_USER": "bob"}, "clusters.local.environment.CIGRI_USER", "CIGRI_* variables are cigri's"),
        ({"Z": "a\0b"}, "clusters.local.environment.Z", "NUL or a line break"),
        ({"Z": "a\nb"}, "clusters.local.environment.Z", "NUL or a line break"),
    ],
)
def test_a_bad_environment_map_is_a_jdl_error_naming_the_key(environment, path, words):
    with pytest.raises(JdlError) as caught:
        parse(
            {
                "name": "t",
                "exec_file": "/bin/true",
                "params": ["a"],
                "clusters": {"local": {}},
                "environment": environment,
            }
        )
    assert caught.value.path == path and words in str(caught.value)


def test_gridsub_of_a_bad_environment_writes_nothing(cli, tmp_path):
    jdl = write_jdl(tmp_path, exec_file="/bin/true", params=["a"], environment={"OK": "1", "BAD NAME": "x"})
    refuse(cli.state, ["gridsub", str(jdl)], 3, "environment.BAD NAME", "not a variable name")


def test_a_cluster_may_give_its_own_environment_map():
    data = {
        "name": "t",
        "exec_file": "/bin/true",
        "params": ["a"],
        "environment": {"A": "global"},
        "clusters": {"one": {}, "two": {"environment": {"A": "two"}}},
    }
    jdl = parse(data)
    assert jdl.clusters["one"]["environment"] == {"A": "global"} and jdl.clusters["two"]["environment"] == {"A": "two"}
    assert json.loads(json.dumps(jdl.as_record()))  # recorded as the campaign's JDL


# ---- OAR: the command carries the environment -----------------------------------------------------------


def test_an_oar_job_gets_the_map_and_its_cigri_variables(tmp_path):
    """What oar-rest submits, run as OAR runs a job: its command with the job's param line appended, in a
    shell, in the job's folder, with $OAR_NODEFILE set. The environment's values travel in a 0600 file
    written through OAR's API into the login's home (never in the command, which OAR shows to everyone)."""
    sent = []
    home = tmp_path / "home"

    def oar_api(request):
        path = request.url.path.removeprefix("/oarapi/")
        if path.startswith("media/chmod/"):
            return httpx.Response(202)
        if path.startswith("media/force/~/"):  # OAR 2.5's API writes the file as the user, in its home
            written = home / path.removeprefix("media/force/~/")
            written.parent.mkdir(parents=True, exist_ok=True)
            written.write_bytes(request.content)
            return httpx.Response(201, json={"status": "created"})
        if request.method == "POST":
            sent.append(json.loads(request.content))
            return httpx.Response(201, json={"id": 100})
        items = [record(100 + i, "Waiting", array_id=100, array_index=i) for i in (1, 2)]
        return httpx.Response(200, json={"items": items, "total": 2, "offset": 0})

    script = dump_env(tmp_path)
    specs = [
        JobSpec(
            job_id=job_id,
            campaign_id=7,
            name=name,
            argv=(str(script), name, "it's; $(touch pwned)"),
            directory=str(tmp_path),
            walltime=90,
            user="alice",  # the campaign's owner: OAR runs the job as the cluster's login
            env={"GREETING": "hello 'world'", "EMPTY": ""},
        )
        for job_id, name in ((41, "a"), (42, "b"))
    ]
    assert mocked(tmp_path, oar_api).submit("cigri.x.7.b.1", specs) == ["101", "102"]
    (payload,) = sent
    assert "hello" not in payload["command"]
    home.mkdir(exist_ok=True)
    payload = through_oarapi(payload, str(home))  # what oarsub gets once OAR 2.5's API ran it through its shells
    nodes = tmp_path / "nodes"
    nodes.write_text("node1\n")
    for line in payload["param_file"].splitlines():
        shell = {"PATH": os.environ["PATH"], "OAR_NODEFILE": str(nodes), "HOME": str(home)}
        subprocess.run(["sh", "-c", f"{payload['command']} {line}"], cwd=tmp_path, env=shell, check=True)
    for job_id, name in ((41, "a"), (42, "b")):
        env = job_env(tmp_path, name)
        assert env["GREETING"] == "hello 'world'" and env["EMPTY"] == "" and env["CIGRI_USER"] == "alice"
        assert (env["CIGRI_JOB_ID"], env["CIGRI_JOBID"], env["CIGRI_JOB_NAME"]) == (str(job_id), str(job_id), name)
        assert env["CIGRI_CAMPAIGN_ID"] == "7" and env["CIGRI_WALLTIME_SECONDS"] == "90"
        assert env["CIGRI_WORKDIR"] == str(tmp_path) and env["CIGRI_NODE_FILE"] == str(nodes)
    assert not (tmp_path / "pwned").exists()


def test_a_slurm_job_gets_the_map_and_its_cigri_variables(tmp_path):
    """The array job script both Slurm adapters submit, run as slurmd runs task 1 of it."""
    spec = JobSpec(
        job_id=41,
        campaign_id=7,
        name="a",
        argv=(str(dump_env(tmp_path)), "a"),
        directory=str(tmp_path),
        walltime=90,
        user="alice",
        env={"GREETING": "hello 'world'", "EMPTY": ""},
    )
    (tmp_path / "args").write_text(args_lines([spec], str(tmp_path)))
    task = {"PATH": os.environ["PATH"], "SLURM_ARRAY_TASK_ID": "1", "SLURM_JOB_ID": "5", "TMPDIR": str(tmp_path)}
    subprocess.run(
        ["sh", "-c", job_script(spec, "/home", f"cat {tmp_path}/args", f"{tmp_path}/")], env=task, check=True
    )
    env = job_env(tmp_path, "a")
    assert env["GREETING"] == "hello 'world'" and env["EMPTY"] == "" and env["CIGRI_USER"] == "alice"
    assert (env["CIGRI_JOB_ID"], env["CIGRI_JOB_NAME"], env["CIGRI_WORKDIR"]) == ("41", "a", str(tmp_path))
