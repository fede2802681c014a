"""The transports: every call bounded in time, ssh's sockets in a private folder, and remote commands that
any login shell hands to sh unchanged."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from cigri.adapters.transport import CONNECT_TIMEOUT, TIMEOUT, LocalRunner, Result, SshRunner, read_load, runner_for
from cigri.errors import ConfigError, TransportError

WORDS = ["a b; echo hacked", "$(touch pwned)", "`id`", "it's", '"quoted" \\ *', "-n", "two\nlines", "!1", "~", ""]


def option(runner: SshRunner, name: str) -> str:
    return next(value.split("=", 1)[1] for value in runner.base if value.startswith(f"{name}="))


def test_a_pass_waits_at_most_the_default_timeout_for_a_cluster():
    assert TIMEOUT == 20 and CONNECT_TIMEOUT == 5
    assert runner_for({}).timeout == TIMEOUT and runner_for({"timeout": 7}).timeout == 7
    ssh = runner_for({"host": "cluster.example"})
    assert ssh.timeout == TIMEOUT and option(ssh, "ConnectTimeout") == "5"


def test_a_command_that_does_not_answer_is_a_transport_error():
    with pytest.raises(TransportError, match=r"sleep 30: no answer within 0.2 s"):
        LocalRunner(timeout=0.2).run(["sleep", "30"])


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    return tmp_path / "run"


def test_ssh_sockets_live_in_a_private_folder_under_an_unguessable_name(runtime):
    old = os.umask(0)
    try:
        runner = SshRunner("cluster.example", user="alice", port=2222)
    finally:
        os.umask(old)
    folder = runtime / "cigri" / "ssh"
    # ssh's hash of the connection, and of the key: no /tmp name to plant, no master shared between keys
    assert re.fullmatch(rf"{folder}/%C-[0-9a-f]{{8}}", option(runner, "ControlPath"))
    other_key = SshRunner("cluster.example", user="alice", port=2222, identity_file="~/.ssh/other")
    assert option(other_key, "ControlPath") != option(runner, "ControlPath")
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_socket_folder_others_could_enter_is_made_private_and_a_planted_link_refused(runtime, tmp_path):
    (runtime / "cigri").mkdir(mode=0o755)
    (runtime / "cigri" / "ssh").mkdir(mode=0o777)
    os.chmod(runtime / "cigri" / "ssh", 0o777)
    SshRunner("cluster.example")
    assert (runtime / "cigri" / "ssh").stat().st_mode & 0o777 == 0o700
    (runtime / "cigri" / "ssh").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (runtime / "cigri" / "ssh").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match="will not use it"):
        SshRunner("cluster.example")


def fake_ssh(tmp_path: Path) -> Path:
    """An ssh that hands the remote string to a login shell as sshd does (``$SHELL -c STRING``), here dash,
    and records the string."""
    script = tmp_path / "ssh"
    script.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys\n"
        f"open({str(tmp_path / 'remote')!r}, 'w').write(sys.argv[-1])\n"
        "sys.exit(subprocess.run(['dash', '-c', sys.argv[-1]]).returncode)\n"
    )
    script.chmod(0o755)
    return script


def test_remote_commands_reach_sh_as_the_exact_words_whatever_the_login_shell(runtime, tmp_path):
    runner = SshRunner("cluster.example", ssh=str(fake_ssh(tmp_path)))
    result = runner.run(["printf", "[%s]\\n", *WORDS])
    assert result.ok and result.stdout == "".join(f"[{word}]\n" for word in WORDS)
    remote = (tmp_path / "remote").read_text()
    # sh -c of one single-quoted word holding nothing a csh (line breaks, !) or fish (backslashes) reads otherwise
    assert re.fullmatch(r"sh -c '[A-Za-z0-9+/= $()|%\"-]*'", remote), remote


class Recorded:
    """A runner that answers every command with ``stdout`` and exit status ``code``, and keeps the argv."""

    def __init__(self, stdout: str, code: int = 0, host: str | None = None):
        self.stdout, self.code, self.host, self.calls = stdout, code, host, []

    def run(self, argv, *, input=None, timeout=None):
        self.calls.append(list(argv))
        return Result(tuple(argv), self.code, self.stdout, "ssh: connect refused" if self.code else "")


def test_a_file_servers_load_is_read_where_the_runner_runs_or_one_ssh_hop_from_there():
    runner = Recorded("0.52 0.40 0.33 1/123 4567\n", host="login.example")
    assert read_load(runner, "login.example", "c") == 0.52
    assert read_load(runner, "localhost", "c") == 0.52
    assert runner.calls == [["cat", "/proc/loadavg"]] * 2
    assert read_load(runner, "nfs1", "c") == 0.52
    assert runner.calls[-1][:2] == ["sh", "-c"] and runner.calls[-1][-1] == "nfs1"  # the host as one word
    assert "|| exit 1" in runner.calls[-1][2]  # the hop's failure is not ssh's own 255 to the transport


def test_a_load_that_cannot_be_read_is_a_transport_error_naming_cluster_and_host():
    with pytest.raises(TransportError, match=r"^c: cannot read the load of nfs1: .*connect refused"):
        read_load(Recorded("", code=1), "nfs1", "c")
    with pytest.raises(TransportError, match=r"^c: the load of nfs1: expected a /proc/loadavg line, got 'busy'"):
        read_load(Recorded("busy\n"), "nfs1", "c")


@pytest.mark.parametrize(
    "script",
    [
        "export DB_PASS='hunter2 '\"'\"'pass'\"'\"''\nsbatch job.sh",
        'export DB_PASS="hunter2 pass" && sbatch job.sh',
        "printf %s 'export DB_PASS=hunter2\\ pass\nexport OTHER=k3y-sentry-dsn' > job.sh && sbatch job.sh",
    ],
)
def test_a_failed_commands_description_quotes_no_shell_script(script):
    """A script may carry a job's environment, however quoted: the description says which program failed
    and how, never the script's text."""
    for argv in (["sh", "-c", script], ["/bin/bash", "-c", script, "bash", "arg"], ["sh", "-s"]):
        shown = Result(tuple(argv), 1, "", "noise\nsbatch: error: Invalid partition name specified\n").describe()
        assert "hunter2" not in shown and "k3y" not in shown
        assert shown.endswith(" exited with 1: sbatch: error: Invalid partition name specified")
        assert shown.startswith(argv[0])


def test_a_failed_commands_description_masks_the_secrets_in_its_words():
    shown = Result(("env", "DB_PASS=hunter2", "curl", "https://bob:s3cr3t@host/x"), 7, "", "").describe()
    assert shown == "env DB_PASS=*** curl https://bob:***@host/x exited with 7"
