"""grid doctor: OK on a working setup (the local cluster, the real local Slurm through ssh and REST), and on a
broken one a FIX line saying what to change, with a non-zero exit."""

from __future__ import annotations

import base64
import json
import time

import pytest

from cigri.cli import grid

from .slurm import rest_cluster_options, ssh_cluster_options


def _findings(cli, code: int = 0) -> list[dict]:
    result = cli.runner.invoke(grid, ["--state", str(cli.state), "doctor", "--json"], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def _fixes(findings: list[dict]) -> list[str]:
    return [f"{f['subject']}: {f['check']}: {f['message']}" for f in findings if not f["ok"]]


def _jwt(expires: float) -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'exp': int(expires), 'sun': 'cigritest'})}.c2ln"


def test_a_new_state_with_the_local_cluster_is_healthy(cli, state):
    findings = _findings(cli)
    assert _fixes(findings) == []
    checks = {(f["subject"], f["check"]) for f in findings}
    assert {("state", "state"), ("cluster local", "reachable"), ("cluster local", "home")} <= checks
    assert f"{state}: consistent" in cli("doctor")


def test_a_missing_state_file_is_said(cli, tmp_path):
    cli.state = tmp_path / "nowhere.db"
    assert _fixes(_findings(cli, code=1)) == [
        f"state: state: {cli.state} does not exist: submit a campaign or give --state"
    ]
    assert not cli.state.exists()  # doctor creates nothing


def test_a_missing_or_readable_key_and_an_expired_token_are_said(cli, tmp_path):
    ssh = ["--adapter", "slurm-ssh", "--host", "127.0.0.1", "--user", "nobody"]
    cli("gridclusters", "add", "nokey", *ssh, "--identity-file", str(tmp_path / "absent"))
    open_key = tmp_path / "id_open"
    open_key.write_text("not a key\n")
    open_key.chmod(0o644)
    cli("gridclusters", "add", "openkey", *ssh, "--identity-file", str(open_key))
    token = tmp_path / "token"
    token.write_text(f"SLURM_JWT={_jwt(time.time() - 3600)}\n")
    token.chmod(0o600)
    rest = ["--url", "http://127.0.0.1:9", "--user", "u", "--token-file", str(token), "--home", "/tmp"]
    cli("gridclusters", "add", "expired", "--adapter", "slurm-rest", *rest)

    out = cli("doctor", code=1)
    fixes = [line for line in out.splitlines() if line.startswith("FIX")]
    assert len(fixes) == 3, out
    assert f"cluster nokey: credentials: identity_file {tmp_path / 'absent'} does not exist" in fixes[1]
    assert "gridclusters set nokey --identity-file PATH" in fixes[1]
    assert f"readable by others (mode 644): chmod 600 {open_key}" in fixes[2]
    assert fixes[0].startswith(f"FIX cluster expired: credentials: the token in {token} expired on ")
    assert "scontrol token" in fixes[0] and _jwt(0).split(".")[1] not in out  # the token itself is never shown


@pytest.mark.slurm
def test_the_real_slurm_through_ssh_and_rest_is_healthy(cli, slurm, shared_dir, tmp_path):
    cli("gridclusters", "add", "ssh", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    options = rest_cluster_options(slurm, tmp_path / "token")
    cli("gridclusters", "add", "rest", "--adapter", "slurm-rest", *options)
    findings = {(f["subject"], f["check"]): f["message"] for f in _findings(cli)}
    assert findings[("cluster ssh", "version")].endswith(slurm_release())
    assert findings[("cluster rest", "version")] == f"slurmrestd {slurm['SLURMRESTD_API']}, Slurm {slurm_release()}"
    assert findings[("cluster rest", "home")] == "home /home/cigritest of cigritest: writable"
    assert findings[("cluster ssh", "home")].startswith(f"remote_dir {shared_dir / 'cigri'} of cigritest: will be")


@pytest.mark.slurm
def test_a_wrong_port_and_an_unwritable_home_are_said(cli, slurm, shared_dir, tmp_path):
    options = ssh_cluster_options(slurm, shared_dir / "cigri")
    options[options.index("--port") + 1] = "1"
    cli("gridclusters", "add", "ssh", "--adapter", "slurm-ssh", *options)
    rest = rest_cluster_options(slurm, tmp_path / "token")
    cli("gridclusters", "add", "rest", "--adapter", "slurm-rest", *rest, "--home", "/root")
    fixes = _fixes(_findings(cli, code=1))
    assert len(fixes) == 2, fixes
    assert fixes[0] == (
        "cluster rest: home: home /root of cigritest is not writable by cigritest: chmod u+rwx /root as cigritest, "
        "or give the user's own: gridclusters set rest --home PATH"
    )
    assert fixes[1].startswith("cluster ssh: reachable: ssh cigritest@127.0.0.1:1: ")
    assert fixes[1].endswith("(check the host, port and user: gridclusters set ssh --host H --port P --user U)")


def slurm_release() -> str:
    import subprocess

    return subprocess.run(["sinfo", "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]


def test_clusters_are_asked_at_once_so_two_unreachable_ones_cost_one_wait(cli, tmp_path, monkeypatch):
    """Each cluster's checks run beside the others' (an ssh timeout each would add up): here two clusters
    answer only once both are being asked, which a one-by-one doctor never reaches. The findings keep the
    clusters' order."""
    import threading

    from cigri import doctor
    from cigri.errors import AdapterError

    both = threading.Barrier(2, timeout=20)

    class Waiting:
        def __init__(self, cluster):
            self.name = cluster.name

        def capacity(self):
            both.wait()  # raises BrokenBarrierError after 20 s when the other cluster is not asked meanwhile
            raise AdapterError(f"{self.name}: ssh: connection timed out")

        def close(self):
            pass

    cli("gridclusters", "add", "far", "--adapter", "local", "--slots", "1")
    real = doctor.adapter_for
    monkeypatch.setattr(
        doctor, "adapter_for", lambda c, ctx: Waiting(c) if c.name in ("local", "far") else real(c, ctx)
    )
    fixes = _fixes(_findings(cli, code=1))
    assert [f.split(": ")[0] for f in fixes] == ["cluster far", "cluster local"]
    assert all("connection timed out" in f for f in fixes)


@pytest.mark.parametrize("flavour", ["2.5", "3"])
def test_an_oar_api_says_its_version(cli, tmp_path, flavour):
    """oar-rest's version is OAR's API's GET /version (contract server, both flavours)."""
    from .oar.contract import OarState
    from .oar.server import OarServer

    server = OarServer(OarState(tmp_path / "oar" / "state.json", cores=2).path, flavour=flavour, auth="ident")
    server.start()
    try:
        cli("gridclusters", "add", "oar", "--adapter", "oar-rest", "--url", server.url, "--login", "cigritest")
        cli("gridclusters", "set", "oar", "--api-flavour", flavour)
        findings = {(f["subject"], f["check"]): f for f in _findings(cli)}
    finally:
        server.stop()
    version = findings["cluster oar", "version"]
    assert version["ok"] and version["message"] == f"OAR {'2.5.10' if flavour == '2.5' else '3.0.0'}, API 1.0.2"
