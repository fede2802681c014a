"""How adapters run commands on a cluster: here (``local``) or through the system OpenSSH client.

Every argument is quoted on the way, so what an adapter passes as one word reaches the remote
program as one word, whatever it holds (``x; rm -rf ~``, ``$(touch pwned)``). Failures to *reach* the
cluster (no such program, ssh refused, auth failure, timeout) become :class:`TransportError` here,
once; a command that ran and failed is returned with its exit status for the adapter to judge.

A command line is no place for a secret: every user of the machine reads it (``ps``, /proc/*/cmdline), on
this side and on the cluster's. What may hold one, a submission carrying its jobs' environment above all,
goes as a script on stdin (:meth:`RemoteCommands._run_script`), the files it writes in its here-documents
(:func:`here_document`); and an error describes a command without the script of a shell
(:meth:`Result.describe`).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import TransportError
from ..private import private_dir
from ..secrets import mask_text

# Seconds a cluster has to answer one call. Slurm's commands retry an absent slurmctld for MessageTimeout
# (default 10 s; measured: squeue and sbatch give up after 9 s with "Unable to contact slurm controller"),
# so 20 s lets the RM say why itself, and still ends a pass that waits on a dead cluster well within the
# minute of a cron period (the cycle talks to clusters concurrently, so one slow cluster delays no other).
TIMEOUT = 20.0
CONNECT_TIMEOUT = 5.0  # seconds to open a TCP connection (ssh, HTTP): a host that answers does so in far less


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        """The command, its exit status and the last line it wrote on stderr (for error messages), secrets
        masked: a shell's script is left out, since it may carry a job's environment however quoted."""
        last = (self.stderr.strip().splitlines() or [""])[-1]
        return mask_text(f"{shown_command(self.argv)} exited with {self.returncode}" + (f": {last}" if last else ""))


SHELLS = ("sh", "bash", "dash", "ksh", "zsh")


def shown_command(argv: Sequence[str]) -> str:
    """``argv`` as a message shows it: a shell's script (the word after ``-c``) as ``<script>``."""
    words = [shlex.quote(word) for word in argv]
    if len(argv) > 2 and os.path.basename(argv[0]) in SHELLS and argv[1] == "-c":
        words[2] = "<script>"
    return " ".join(words)


def _run(argv: list[str], input: str | None, timeout: float) -> subprocess.CompletedProcess:
    """A command's exit status and outputs; nothing on stdin unless ``input`` is given. Outputs are read as
    UTF-8, a byte that is not (a name in Latin-1) becoming U+FFFD, so that no answer is unreadable."""
    stdin = None if input is not None else subprocess.DEVNULL
    return subprocess.run(
        argv, input=input, capture_output=True, encoding="utf-8", errors="replace", timeout=timeout, stdin=stdin
    )


class CommandRunner(Protocol):
    where: str  # for messages: "local" or "user@host:port"

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = None) -> Result: ...

    def close(self) -> None: ...


class LocalRunner:
    """Commands on this machine (a login node, or tests)."""

    where = "local"

    def __init__(self, timeout: float = TIMEOUT):
        self.timeout = timeout

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = None) -> Result:
        try:
            done = _run(list(argv), input, timeout or self.timeout)
        except FileNotFoundError as exc:
            raise TransportError(f"{argv[0]}: command not found (set the cluster's bin_dir?)") from exc
        except PermissionError as exc:
            raise TransportError(f"{argv[0]}: permission denied") from exc
        except subprocess.TimeoutExpired as exc:
            raise TransportError(f"{mask_text(shown_command(argv))}: no answer within {exc.timeout:g} s") from exc
        return Result(tuple(argv), done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass


class SshRunner:
    """Commands through ``ssh`` (the user's ~/.ssh/config, agent and ProxyJump apply), one multiplexed
    connection reused between calls (ControlMaster), BatchMode so that nothing ever prompts."""

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int | None = None,
        identity_file: str | None = None,
        timeout: float = TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        control_dir: Path | None = None,
        ssh: str = "ssh",
    ):
        self.host, self.user, self.port = host, user, port
        self.timeout = timeout
        target = f"{user}@{host}" if user else host
        self.where = f"{target}:{port}" if port else target
        control_dir = private_dir(control_dir or runtime_dir() / "ssh")
        self.base = [
            ssh,
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={connect_timeout:g}",
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "ServerAliveCountMax=2",
            "-o",
            "ControlMaster=auto",
            "-o",
            # %C: ssh's hash of host, port and user, short for the socket path limit; a master opened with
            # one key must not serve another (a refused key must be refused)
            f"ControlPath={control_dir}/%C-{hashlib.sha1(str(identity_file).encode()).hexdigest()[:8]}",
            "-o",
            "ControlPersist=60",
            "-o",
            "StrictHostKeyChecking=accept-new",  # cron cannot answer a prompt; a changed key is still refused
        ]
        if port:
            self.base += ["-p", str(port)]
        if identity_file:
            self.base += ["-i", os.path.expanduser(identity_file), "-o", "IdentitiesOnly=yes"]
        if user:
            self.base += ["-l", user]
        self.base += [host, "--"]

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = None) -> Result:
        try:
            done = _run([*self.base, remote_command(argv)], input, timeout or self.timeout)
        except FileNotFoundError as exc:
            raise TransportError("ssh: command not found (install openssh-client)") from exc
        except subprocess.TimeoutExpired as exc:
            raise TransportError(f"ssh {self.where}: no answer within {exc.timeout:g} s") from exc
        if done.returncode == 255:  # ssh's own failure: the command did not run
            reason = (done.stderr.strip().splitlines() or ["connection failed"])[-1]
            raise TransportError(f"ssh {self.where}: {reason}")
        return Result(tuple(argv), done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass  # the master connection persists briefly (ControlPersist) for the next pass


class RemoteCommands:
    """What an adapter driving an RM's commands through a transport needs (slurm-ssh, oar-ssh): the
    commands' paths, a run that turns "the RM does not answer" into TransportError, the cluster's home
    directory and cigri's folder there. Subclasses set ``name``, ``config``, ``runner`` and ``unreachable``
    (the RM's messages that mean its controller is not there)."""

    name: str
    config: dict
    runner: CommandRunner
    unreachable: re.Pattern
    _home: str | None = None

    def _cmd(self, name: str) -> str:
        bin_dir = self.config.get("bin_dir")
        return f"{bin_dir.rstrip('/')}/{name}" if bin_dir else name

    def _run(self, argv: Sequence[str], *, input: str | None = None) -> Result:
        result = self.runner.run(argv, input=input)
        if not result.ok and self.unreachable.search(result.stderr):
            raise TransportError(f"{self.name}: {result.describe()}")
        return result

    def _run_script(self, script: str) -> Result:
        """A POSIX shell script run on the cluster, read from stdin (``sh -s``): what it holds, and the files its
        here-documents write, are in no command line on the way (ssh's included)."""
        return self._run(["sh", "-s"], input=script)

    @property
    def home(self) -> str:
        if self._home is None:
            result = self._run(shell('printf %s "$HOME"'))
            if not result.ok or not result.stdout.startswith("/"):
                raise TransportError(f"{self.name}: cannot read the home directory: {result.describe()}")
            self._home = result.stdout
        return self._home

    @property
    def remote_dir(self) -> str:
        from . import expand_home

        folder = expand_home(self.config.get("remote_dir") or "~/.cigri", self.home)
        return folder if folder.startswith("/") else f"{self.home}/{folder}"


def remote_command(argv: Sequence[str]) -> str:
    """What ssh gives the login shell to run ``argv``: ``sh -c`` of a script the login shell sees only as
    base64 in single quotes, which sh, bash, csh, tcsh, fish and zsh all read the same way (csh breaks on
    a quoted line break, fish undoes backslashes inside single quotes: the quoted words cannot reach
    them). sh decodes the script, ``eval`` splits it back into exactly argv."""
    script = base64.b64encode(shlex.join(argv).encode()).decode()
    return f"sh -c 'eval \"$(printf %s {script} | base64 -d)\"'"


def at_most_once(lock_file: str, answer_file: str, submit: str) -> str:
    """A shell script that runs ``submit`` (which ends by writing ``answer_file`` and printing it) unless
    ``answer_file`` exists, which it prints instead; both under an exclusive lock on ``lock_file`` (flock(1),
    when the cluster has it). A killed almighty's ssh client goes on: its submission may still run on the
    cluster when the next pass, which did not find the batch yet, submits it again; this waits for it and
    answers its ids instead of submitting the batch twice."""
    lock, answer = shlex.quote(lock_file), shlex.quote(answer_file)
    return (
        f"exec 9>>{lock} && {{ ! command -v flock >/dev/null || flock 9; }} && "
        f"if [ -e {answer} ]; then cat {answer}; else {submit}; fi"
    )


def here_document(text: str) -> tuple[str, str]:
    """(the redirection, the lines to put after the command's line) of a here-document feeding ``text`` to a
    command as it is: nothing in it is expanded, and its end word is a digest of the text, which no line of
    the text can be. ``text`` ends with a line break (one is added otherwise)."""
    text = text if text.endswith("\n") or not text else text + "\n"
    end = "CIGRI_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"<<'{end}'", f"{text}{end}\n"


def runtime_dir() -> Path:
    """cigri's private folder for sockets: $XDG_RUNTIME_DIR/cigri (a per-user tmpfs), else ~/.cache/cigri."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "cigri" if base else Path.home() / ".cache" / "cigri"


def shell(script: str) -> list[str]:
    """argv running a POSIX shell script (clusters need only sh and their RM's commands)."""
    return ["sh", "-c", script]


LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")  # this machine, whatever the transport's host is called


def read_load(runner: CommandRunner, host: str, cluster: str) -> float:
    """The 1-minute load of ``host`` (the first figure of its ``/proc/loadavg``) read through ``runner``:
    where the runner runs when ``host`` is that machine (localhost, or the runner's own ssh host), else
    through ssh from there (the file server is often reachable from the cluster's login host only).
    TransportError naming the cluster and the host when it cannot be read."""
    if host in LOCAL_HOSTS or host == getattr(runner, "host", None):
        argv = ["cat", "/proc/loadavg"]
    else:
        # exit 1, not ssh's 255: an ssh transport would take the hop's failure for its own
        hop = f'ssh -o BatchMode=yes -o ConnectTimeout={CONNECT_TIMEOUT:g} -- "$0" cat /proc/loadavg || exit 1'
        argv = ["sh", "-c", hop, host]
    result = runner.run(argv)
    if not result.ok:
        raise TransportError(f"{cluster}: cannot read the load of {host}: {result.describe()}")
    return parse_load(result.stdout, f"{cluster}: the load of {host}")


def parse_load(text: str, what: str) -> float:
    """The 1-minute load of a ``/proc/loadavg`` line; TransportError naming ``what`` when it is not one."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        raise TransportError(f"{what}: expected a /proc/loadavg line, got {text.strip()[:80]!r}") from None


def runner_for(config: dict) -> CommandRunner:
    """The transport a cluster's config asks for: ssh when it names a host, else local commands."""
    timeout = float(config.get("timeout") or TIMEOUT)
    if config.get("host"):
        return SshRunner(
            config["host"],
            user=config.get("user"),
            port=config.get("port"),
            identity_file=config.get("identity_file"),
            timeout=timeout,
        )
    return LocalRunner(timeout=timeout)
