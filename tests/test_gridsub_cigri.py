"""gridsub as a CiGri user meets it (issue 24, items 2-8): $HOME where jobs and prologues run, prologues under
bash, {OAR_JOB_ID}, OAR's resources refused where they cannot go, unknown clusters left out with a warning,
jobs added to a terminated campaign, ``-d`` as CiGri's ``--details`` and ``-n`` for the dry run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from cigri import macros
from cigri.adapters import AdapterContext
from cigri.adapters.slurm import SlurmSsh
from cigri.cli import grid
from cigri.clock import RealClock
from cigri.errors import JdlError
from cigri.jdl import parse
from cigri.model import Cluster

from .conftest import CLUSTER_HOME, write_jdl
from .slurm import ssh_cluster_options


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home of its own: {HOME}, $HOME and ~ are this folder, for the submitter and the local cluster alike."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _invoke(cli, *args):
    return CliRunner().invoke(grid, ["--state", str(cli.state), *args], catch_exceptions=False)


# ---- items 2 and 3: $HOME where things run, prologues under bash ----------------------------------------------


def test_home_in_exec_file_directory_and_prologue_is_the_cluster_users(cli, home, tmp_path):
    _script(home / "bin" / "job.sh", '#!/bin/sh\necho "$1 in $(pwd)" > "$1.out"\n')
    _script(home / "env.bash", "greeting() { echo hello; }\n")
    path = write_jdl(
        tmp_path,
        exec_file="$HOME/bin/job.sh",
        exec_directory="$HOME/out/{CAMPAIGN_ID}",
        prologue=[
            "set -e",
            "source {HOME}/env.bash",  # bash's source, CiGri's example prologue
            "[[ -d $HOME ]]",  # and bash's test
            "mkdir -p $HOME/out/{CAMPAIGN_ID}",
            "greeting > ~/out/{CAMPAIGN_ID}/prologue.txt",
        ],
        params=["a", "b"],
    )
    cid = cli.submit(path)
    cli.until_done(timeout=60)
    out = home / "out" / str(cid)
    assert (out / "prologue.txt").read_text() == "hello\n"
    assert (out / "a.out").read_text() == f"a in {out}\n"
    assert cli.json("gridstat", "-c", str(cid))["done"] == 2


def test_the_dry_run_shows_the_values_expanded(cli, home, tmp_path):
    (home / "params.txt").write_text("a 1\n")
    path = write_jdl(
        tmp_path,
        exec_file="{HOME}/bin/job.sh",
        exec_directory="$HOME/out/{CAMPAIGN_ID}",
        param_file="$HOME/params.txt",
        prologue=["mkdir -p $HOME/out/{CAMPAIGN_ID}", "echo {OAR_JOB_ID}"],
    )
    out = cli("gridsub", "-n", str(path))
    assert f"exec_file={home}/bin/job.sh" in out
    assert f"exec_directory={home}/out/{{CAMPAIGN_ID}}" in out
    assert f"param_file: {home}/params.txt" in out
    assert f"prologue: mkdir -p {home}/out/{{CAMPAIGN_ID}}; echo $CIGRI_LOCAL_JOB_ID" in out
    assert f"job a: {home}/bin/job.sh a 1" in out
    assert cli.json("gridstat") == []


def test_a_stage_runs_under_sh_where_the_cluster_has_no_bash(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    argv = macros.stage_argv('echo "$0"; echo ${BASH_VERSION:-none}')
    done = subprocess.run(argv, env={"PATH": str(empty)}, capture_output=True, text=True, check=True)
    assert done.stdout == "cigri-stage\nnone\n"
    done = subprocess.run(argv, env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, check=True)
    assert done.stdout.startswith("cigri-stage\n") and done.stdout != "cigri-stage\nnone\n"


def test_a_stage_script_of_many_lines_travels_as_one_line_words():
    argv = macros.stage_argv("set -e\nif true; then\n  echo 'a b'\nfi\r\n")
    assert not any("\n" in word or "\r" in word for word in argv)
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert done.stdout == "a b\n"


@pytest.mark.slurm
def test_a_cigri_prologue_runs_under_bash_on_the_real_slurm(cli, slurm, shared_dir):
    cli("gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    log = shared_dir / "stage.log"
    prologue = [
        "set -e",
        "[[ -d \\$HOME ]]",  # CiGri's README escaping, and bash's test
        f"echo {{OAR_JOB_ID}} {{CAMPAIGN_ID}} $(id -un) > {log}",
        f"cd {{HOME}} && pwd >> {log}",
    ]
    path = write_jdl(shared_dir, exec_file="/bin/true", params=["a"], clusters={"slurm": {}}, prologue=prologue)
    cid = cli.submit(path)
    cli.until_done(timeout=300)
    first, home = log.read_text().splitlines()
    job_id, campaign, user = first.split()
    assert job_id.isdigit() and (campaign, user) == (str(cid), "cigritest")
    assert home == str(CLUSTER_HOME)


# ---- item 4: {OAR_JOB_ID} -----------------------------------------------------------------------------------------


def test_oar_job_id_is_the_resource_managers_id_of_the_stage(cli, store, home, tmp_path):
    path = write_jdl(tmp_path, exec_file="/bin/true", params=["a"], prologue=["echo {OAR_JOB_ID} > ~/id"])
    cid = cli.submit(path)
    cli.until_done(timeout=60)
    remote = store.campaign_clusters(cid)["local"]["prologue_remote"]
    assert (home / "id").read_text() == remote.split("#")[0] + "\n"


# ---- item 5: OAR's resources and cluster_job_type where they cannot go --------------------------------------------


def _slurm(tmp_path) -> SlurmSsh:
    return SlurmSsh(Cluster("dahu", "slurm-ssh", {}), AdapterContext(tmp_path, RealClock()))


def test_a_slurm_cluster_refuses_oar_resources_saying_what_to_write(tmp_path):
    settings = parse({"name": "n", "exec_file": "x", "nb_jobs": 1, "clusters": {"dahu": {}}}).clusters["dahu"]
    with pytest.raises(JdlError) as err:
        _slurm(tmp_path).check({**settings, "resources": "nodes=3+other_type_of_resource=2"}, "clusters.dahu")
    assert str(err.value) == (
        "clusters.dahu.resources: 'nodes=3+other_type_of_resource=2' is OAR's syntax (+ or a {...} filter), which "
        "the Slurm cluster 'dahu' does not take: give it one hierarchy of nodes and cores, such as /nodes=1/core=4"
    )


def test_the_local_cluster_refuses_oar_resources_and_cluster_job_types(cli, tmp_path):
    path = write_jdl(tmp_path, exec_file="/bin/true", params=["a"], resources="{gpu='YES'}/nodes=1/core=1")
    result = _invoke(cli, "gridsub", str(path))
    assert result.exit_code == 3
    assert result.stderr == (
        "grid gridsub: error: clusters.local.resources: \"{gpu='YES'}/nodes=1/core=1\" is OAR's syntax (+ or a {...} "
        "filter), which the local cluster 'local' does not take: give it one hierarchy of nodes and cores, such as "
        "/nodes=1/core=4\n"
    )
    path = write_jdl(tmp_path, exec_file="/bin/true", params=["a"], cluster_job_type="deploy")
    result = _invoke(cli, "gridsub", str(path))
    assert result.exit_code == 3
    assert result.stderr == (
        "grid gridsub: error: clusters.local.cluster_job_type: cluster 'local' (local) has no job types "
        "(OAR's -t): leave cluster_job_type out for it\n"
    )
    assert cli.json("gridstat") == []


# ---- item 6: unknown clusters ----------------------------------------------------------------------------------


def test_an_unknown_cluster_is_left_out_with_a_warning(cli, tmp_path):
    path = write_jdl(tmp_path, exec_file="/bin/true", params=["a"], clusters={"luke": {}, "local": {}, "dahu": {}})
    result = _invoke(cli, "gridsub", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "grid gridsub: warning: clusters.luke: unknown cluster, left out (known: local)\n"
        "grid gridsub: warning: clusters.dahu: unknown cluster, left out (known: local)\n"
    )
    cid = int(result.stdout.split("CAMPAIGN_ID=")[1])
    assert list(cli.json("gridstat", "-c", str(cid), "-J")["clusters"]) == ["local"]


def test_a_campaign_naming_no_known_cluster_is_refused(cli, tmp_path):
    path = write_jdl(tmp_path, exec_file="/bin/true", params=["a"], clusters={"luke": {}, "dahu": {}})
    result = _invoke(cli, "gridsub", str(path))
    assert result.exit_code == 3
    assert result.stderr == (
        "grid gridsub: error: clusters: no cluster the campaign names is known (luke, dahu; known: local; add one "
        "with gridclusters add)\n"
    )
    assert cli.json("gridstat") == []


# ---- item 7: gridsub -c on a terminated campaign --------------------------------------------------------------


def test_jobs_added_to_a_terminated_campaign_put_it_back_in_treatment(cli, home, tmp_path):
    log = home / "epilogue.log"
    path = write_jdl(tmp_path, exec_file="/bin/true", params=["a"], epilogue=[f"echo ran >> {log}"])
    cid = cli.submit(path)
    cli.until_done(timeout=60)
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    assert cli("gridsub", "-c", str(cid), "-J", '["b", "c"]') == f"2 jobs added to campaign {cid}\n"
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["total"], row["ended_at"]) == ("in_treatment", 3, None)
    cli.until_done(timeout=60)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"]) == ("terminated", 3)
    assert log.read_text() == "ran\nran\n"  # the epilogue runs again, after the new jobs


def test_a_campaign_of_nb_jobs_0_ends_and_runs_the_jobs_added_later(cli, tmp_path):
    cid = cli.submit(write_jdl(tmp_path, exec_file="/bin/true", nb_jobs=0))
    cli.until_done(timeout=60)
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    cli("gridsub", "-c", str(cid), "-J", '["a", "b"]')
    cli.until_done(timeout=60)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", 2, 2)


def test_jobs_are_not_added_to_a_cancelled_campaign(cli, tmp_path):
    cid = cli.submit(write_jdl(tmp_path, exec_file="/bin/true", params=["a"]))
    cli("griddel", str(cid))
    result = _invoke(cli, "gridsub", "-c", str(cid), "-J", '["b"]')
    assert result.exit_code == 1
    assert result.stderr == f"grid gridsub: error: campaign {cid} is cancelled: jobs can no longer be added\n"


# ---- item 8: -d is --details, -n the dry run -------------------------------------------------------------------


def test_gridsub_d_submits_and_prints_the_campaigns_json(cli, tmp_path):
    path = write_jdl(tmp_path, name="sweep", exec_file="/bin/true", params=["a 1", "b 2"])
    out = cli("gridsub", "-d", str(path))
    lines = out.splitlines()
    assert lines[0] == "Campaign successfully submitted" and lines[-1].startswith("CAMPAIGN_ID=")
    details = json.loads("\n".join(lines[1:-1]))
    cid = int(lines[-1].split("=")[1])
    assert (details["id"], details["name"], details["state"], details["jobs"]) == (cid, "sweep", "in_treatment", 2)
    assert details["jdl"]["clusters"]["local"]["exec_file"] == "/bin/true"
    added = cli("gridsub", "-c", str(cid), "-J", '["c 3"]', "--details")
    assert added.split("\n")[0].endswith(f"added to campaign {cid}")
    assert json.loads(added.split("\n", 1)[1])["jobs"] == 3


def test_gridsub_n_is_the_dry_run(cli, tmp_path):
    path = write_jdl(tmp_path, name="sweep", exec_file="/bin/echo", params=["a 1"])
    for option in ("-n", "--dry-run"):
        out = cli("gridsub", option, str(path))
        assert "job a: /bin/echo a 1" in out and "nothing submitted (--dry-run)" in out
    assert cli.json("gridstat") == []
