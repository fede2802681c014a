"""A job's environment never travels in a command line, which anyone on the machine reads (``ps``,
/proc/*/cmdline): slurm-ssh sends its submission script on stdin (through ssh too: not even base64 in ssh's
argv), the local cluster gives it to the process itself; and a refused submission's error quotes none of it."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest

from cigri.adapters import AdapterContext
from cigri.adapters.slurm import SlurmSsh
from cigri.adapters.transport import CommandRunner, Result, SshRunner
from cigri.clock import RealClock
from cigri.errors import SubmitError
from cigri.model import Cluster, JobSpec

from .conftest import write_jdl


def secret_environment() -> dict[str, str]:
    """A job's environment of values no other test uses: a watch sees every process of the machine, those of the
    tests running beside it included. Quotes, a space and a command substitution: nothing of it is run."""
    tag = uuid.uuid4().hex[:8]
    return {
        "DB_PASS": f"hunter2 'pass' {tag}",
        "SENTRY_DSN": f"https://k3y{tag}@sentry.example/1",
        "ODD": f"$(touch pwned) `id` {tag}",
    }


def shows_a_secret(text: str, environment: dict[str, str]) -> bool:
    """Does ``text`` hold one of the values, as it is or quoted for a shell?"""
    return any(value in text or shlex.quote(value) in text for value in environment.values())


class ArgvWatch:
    """Reads every process's command line (/proc/*/cmdline, what ``ps`` shows anyone) over and over while it is
    on, keeping those that show one of the ``environment``'s values."""

    def __init__(self, environment: dict[str, str]):
        self.environment = environment
        self.leaks: list[str] = []
        self.seen: set[str] = set()  # every command line read, to check the watch saw what ran
        self._on = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ArgvWatch:
        self._on.set()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._on.clear()
        self._thread.join()

    def _watch(self) -> None:
        while self._on.is_set():
            # listed, not globbed: pathlib's glob stats each match and raises ProcessLookupError (ESRCH) for a
            # process that ends between the listing and the stat
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    line = Path("/proc", pid, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:  # the process ended meanwhile
                    continue
                self.seen.add(line)
                if shows_a_secret(line, self.environment):
                    self.leaks.append(line)
            time.sleep(0.002)  # a breath between scans for the processes watched, on a small machine


class Recording:
    """A CommandRunner around another that keeps every argv (and stdin) it is given."""

    def __init__(self, inner: CommandRunner):
        self.inner = inner
        self.calls: list[tuple[list[str], str | None]] = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def run(self, argv, *, input=None, timeout=None) -> Result:
        self.calls.append((list(argv), input))
        return self.inner.run(argv, input=input, timeout=timeout)

    def close(self) -> None:
        self.inner.close()


def test_the_watch_sees_a_command_line_while_it_runs():
    marker = {"M": "marker-7f3a9c"}
    with ArgvWatch(marker) as watch:
        subprocess.run(["sh", "-c", "sleep 0.3", "sh", "marker-7f3a9c"], check=True)
    assert watch.leaks and len(watch.seen) > 1


def test_a_local_job_gets_its_environment_and_no_process_shows_it(cli, tmp_path):
    script = tmp_path / "dump.sh"
    script.write_text(f'#!/bin/sh\nsleep 1\nenv -0 > "{tmp_path}/env.$1"\n')
    script.chmod(0o755)
    environment = secret_environment()
    cli.submit(write_jdl(tmp_path, exec_file=str(script), params=["a"], environment=environment))
    with ArgvWatch(environment) as watch:
        cli.until_done()
    got = dict(item.split("=", 1) for item in (tmp_path / "env.a").read_text().split("\0") if item)
    assert {name: got[name] for name in environment} == environment
    assert not watch.leaks and any(str(script) in line for line in watch.seen)  # it watched the job run


# ---- slurm-ssh over ssh, without Slurm: a fake ssh and a fake sbatch ------------------------------------------


def fake_ssh(folder: Path) -> Path:
    """An ssh that records its argv (one JSON line per call) and hands the remote string to dash, as sshd
    hands it to a login shell, its stdin passed on."""
    script = folder / "ssh"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, subprocess, sys\n"
        f"open({str(folder / 'ssh.argv')!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
        "sys.exit(subprocess.run(['dash', '-c', sys.argv[-1]]).returncode)\n"
    )
    script.chmod(0o755)
    return script


def fake_sbatch(folder: Path, refuse: bool) -> Path:
    """An sbatch that records its argv and answers an array id, or refuses as Slurm does."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    answer = 'echo "sbatch: error: Invalid partition name specified" >&2; exit 1' if refuse else "echo 4242"
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{folder}/sbatch.argv"\n{answer}\n')
    (bin_dir / "sbatch").chmod(0o755)
    return bin_dir


def decoded(words: Iterable[str]) -> str:
    """``words`` and whatever base64 they hold, decoded (ssh's argv carries its remote command so)."""
    texts = list(words)
    for word in texts[:]:
        for run in re.findall(r"[A-Za-z0-9+/=]{16,}", word):
            try:
                texts.append(base64.b64decode(run, validate=True).decode(errors="replace"))
            except (binascii.Error, ValueError):
                continue
    return "\n".join(texts)


@pytest.fixture
def over_ssh(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()

    def adapter(refuse: bool = False) -> tuple[SlurmSsh, Recording]:
        config = {
            "host": "cluster.example",
            "bin_dir": str(fake_sbatch(tmp_path, refuse)),
            "remote_dir": str(tmp_path / "rd"),
            "accounting": "none",
        }
        runner = Recording(SshRunner("cluster.example", ssh=str(fake_ssh(tmp_path))))
        return SlurmSsh(Cluster("ssh", "slurm-ssh", config), AdapterContext(tmp_path, RealClock()), runner), runner

    return adapter


def specs(folder: Path, environment: dict[str, str]) -> list[JobSpec]:
    return [
        JobSpec(i, 7, f"j{i}", ("/bin/true", f"j{i}"), str(folder), 60, resources="core=1", env=environment)
        for i in (1, 2)
    ]


def test_slurm_ssh_sends_the_submission_on_stdin_never_in_a_command_line(over_ssh, tmp_path):
    adapter, runner = over_ssh()
    environment = secret_environment()
    assert adapter.submit("cigri.x.7.b.1", specs(tmp_path, environment)) == ["4242_1", "4242_2"]
    assert not any(shows_a_secret(" ".join(argv), environment) for argv, _ in runner.calls)
    ssh_argvs = [json.loads(line) for line in (tmp_path / "ssh.argv").read_text().splitlines()]
    assert ssh_argvs and not any(shows_a_secret(decoded(argv), environment) for argv in ssh_argvs)
    assert not shows_a_secret((tmp_path / "sbatch.argv").read_text(), environment)
    script = tmp_path / "rd" / "cigri.x.7.b.1.sh"
    assert script.stat().st_mode & 0o777 == 0o600  # the job script carries the environment: the user's alone
    assert all(f"export {name}={shlex.quote(value)}" in script.read_text() for name, value in environment.items())
    assert not (tmp_path / "pwned").exists()


def test_a_refused_slurm_ssh_submission_quotes_sbatch_and_none_of_the_environment(over_ssh, tmp_path):
    adapter, _ = over_ssh(refuse=True)
    environment = secret_environment()
    with pytest.raises(SubmitError) as refused:
        adapter.submit("cigri.x.7.b.1", specs(tmp_path, environment))
    message = str(refused.value)
    assert message.startswith("ssh refused the batch: ") and "sbatch: error: Invalid partition name" in message
    assert not shows_a_secret(message, environment) and "hunter2" not in message and "k3y" not in message
