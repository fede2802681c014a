"""``oarsub``, ``oarstat``, ``oardel``, ``oarhold`` and ``oarresume`` of a contract OAR cluster, for cigri's ssh
adapter.

    python -m tests.oar.fake_commands oarsub --state PATH [-l RES] [-p PROP] [-t TYPE] [-n NAME] [-d DIR]
                                       [--project P] [--array-param-file FILE] [-S] COMMAND...
    python -m tests.oar.fake_commands oarstat --state PATH [-J] [-f] [-u [USER]] [-j ID]... [--array ID]
    python -m tests.oar.fake_commands oardel --state PATH [--array] ID...
    python -m tests.oar.fake_commands oarhold|oarresume --state PATH ID...

Outputs as OAR prints them: oarsub one ``OAR_JOB_ID=<id>`` line per job then, for an array of several jobs,
``OAR_ARRAY_ID=<id>``; ``oarstat -J`` a JSON object of the jobs by id; oardel OAR's "Deleting the job"
lines; oarhold and oarresume OAR's "Hold/Resume request was sent" lines. Errors go to stderr with a non-zero
exit status. The user is the one running the command.

``install_fake_commands`` writes them as shell wrappers (absolute python and state paths), so that they run
for the user cigritest over ssh: give a python cigritest may run (the default, /usr/bin/python3, does; the
venv's python lives under /root) and keep the state file in a folder cigritest can reach. The wrappers run a
copy of this package staged beside them: the checkout itself may be private (a 0700 temporary clone).

``execute`` runs a job's command as OAR does, through the user's shell: what the shell makes of the words
cigri sent is what the job gets.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .contract import FINAL_STATES, OarError, OarState, param_lines

PACKAGE = Path(__file__).resolve().parent
COMMANDS = ("oarsub", "oarstat", "oardel", "oarhold", "oarresume")
SYSTEM_PYTHON = "/usr/bin/python3"


def install_fake_commands(bin_dir, state_path, python: str | None = None) -> dict[str, Path]:
    """Write the executable commands (``COMMANDS``) into ``bin_dir``; their paths by name."""
    bin_dir = Path(bin_dir)
    bin_dir.mkdir(parents=True, exist_ok=True)
    python = python or (SYSTEM_PYTHON if Path(SYSTEM_PYTHON).exists() else sys.executable)
    state = Path(state_path).resolve()
    OarState(state)
    library = stage_package(bin_dir / "lib")
    written = {}
    for name in COMMANDS:
        script = bin_dir / name
        script.write_text(
            "#!/bin/sh\n"
            f"PYTHONPATH={shlex.quote(str(library))} PYTHONDONTWRITEBYTECODE=1 exec {shlex.quote(str(python))} "
            f'-m tests.oar.fake_commands {name} --state {shlex.quote(str(state))} "$@"\n'
        )
        script.chmod(0o755)
        written[name] = script
    return written


def stage_package(library: Path) -> Path:
    """A copy of tests.oar (the contract, these commands) under ``library``, readable by everyone."""
    package = library / "tests" / "oar"
    package.mkdir(parents=True, exist_ok=True)
    (library / "tests" / "__init__.py").touch()
    for source in PACKAGE.glob("*.py"):
        shutil.copyfile(source, package / source.name)
    for folder in (library, library / "tests", package):
        folder.chmod(0o755)
    return library


def execute(job: dict, user: str | None = None, home: str | None = None) -> subprocess.CompletedProcess:
    """Run ``job``'s command (its executable and its words, the param line appended) as OAR runs it: by
    bash, in the job's directory, as ``user`` (root may run it as the cluster's user), with ``home`` as its
    HOME (the user's home on the contract cluster; default: this process's)."""
    as_user = ["runuser", "-u", user, "--"] if user else []
    return subprocess.run(
        [*as_user, "bash", "-c", job["command"]],
        env={**os.environ, "HOME": home} if home else None,
        cwd=job["launching_directory"],
        capture_output=True,
        text=True,
        check=False,
    )


def _parser(name: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=name)
    parser.add_argument("--state", required=True, help="the contract cluster's state file")
    if name == "oarsub":
        parser.add_argument("-l", "--resource", action="append", default=[])
        parser.add_argument("-p", "--property")
        parser.add_argument("-t", "--type", action="append", default=[])
        parser.add_argument("-n", "--name")
        parser.add_argument("-d", "--directory")
        parser.add_argument("--project")
        parser.add_argument("--array-param-file")
        parser.add_argument("-S", "--scanscript", action="store_true")
        parser.add_argument("command", nargs="+")
    elif name == "oarstat":
        parser.add_argument("-J", "--json", action="store_true")
        parser.add_argument("-f", "--full", action="store_true")
        parser.add_argument("-u", "--user", nargs="?", const="", default=None)
        parser.add_argument("-j", "--job", action="append", type=int, default=[])
        parser.add_argument("--array", type=int)
    elif name == "oardel":
        parser.add_argument("--array", action="store_true")
        parser.add_argument("job_ids", nargs="+", type=int)
    else:
        parser.add_argument("job_ids", nargs="+", type=int)
    return parser


def oarsub(args: argparse.Namespace, state: OarState, out, err) -> int:
    params = None
    if args.array_param_file:
        params = param_lines(Path(args.array_param_file).read_text())
    command = " ".join(args.command)
    ids = state.submit(
        owner=getpass.getuser(),
        command=command,
        resources=",".join(args.resource) or None,
        params=params,
        types=args.type,
        name=args.name,
        directory=args.directory or str(Path.cwd()),
        properties=args.property,
        project=args.project,
        initial_request="oarsub " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    )
    for job_id in ids:
        print(f"OAR_JOB_ID={job_id}", file=out)
    if len(ids) > 1:
        print(f"OAR_ARRAY_ID={ids[0]}", file=out)
    return 0


def oarstat(args: argparse.Namespace, state: OarState, out, err) -> int:
    jobs = state.jobs()
    if args.job:
        jobs = [j for j in jobs if j["id"] in args.job]
    elif args.array is not None:
        jobs = [j for j in jobs if j["array_id"] == args.array]
    else:
        jobs = [j for j in jobs if j["state"] not in FINAL_STATES]
    if args.user is not None:
        owner = args.user or getpass.getuser()
        jobs = [j for j in jobs if j["owner"] == owner]
    for job in jobs:
        del job["assigned_resources"]
    if args.json:
        print(json.dumps({str(j["id"]): j for j in jobs}, indent=1), file=out)
        return 0
    if args.full:
        for job in jobs:
            print(f"Job_Id: {job['id']}", file=out)
            for key, value in job.items():
                if key != "id":
                    print(f"    {key} = {value}", file=out)
            print(file=out)
        return 0
    print("Job id     Name           User           Submission Date     S Queue", file=out)
    print("---------- -------------- -------------- ------------------- - ----------", file=out)
    for job in jobs:
        line = f"{job['id']:<10} {(job['name'] or ''):<14} {job['owner']:<14} {job['submission_time']:<19} "
        print(line + f"{job['state'][0]} {job['queue']}", file=out)
    return 0


def oardel(args: argparse.Namespace, state: OarState, out, err) -> int:
    ids = args.job_ids
    if args.array:
        ids = [j["id"] for j in state.jobs() if j["array_id"] in args.job_ids]
    return _each(state.delete, ids, out, err)


def _each(action, ids: list[int], out, err) -> int:
    """``action`` on every job, OAR's answer of each printed; non-zero when any was refused."""
    status = 0
    for job_id in ids:
        try:
            print(action(job_id), file=out)
        except OarError as exc:
            print(f"[ERROR] {exc}", file=err)
            status = 1
    return status


def main(argv: list[str] | None = None, out=None, err=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out, err = out or sys.stdout, err or sys.stderr
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m tests.oar.fake_commands {{{','.join(COMMANDS)}}} --state PATH ...", file=err)
        return 2
    name = argv[0]
    args = _parser(name).parse_args(argv[1:])
    action = {
        "oarsub": oarsub,
        "oarstat": oarstat,
        "oardel": oardel,
        "oarhold": lambda args, state, out, err: _each(state.hold, args.job_ids, out, err),
        "oarresume": lambda args, state, out, err: _each(state.resume, args.job_ids, out, err),
    }[name]
    try:
        return action(args, OarState(args.state), out, err)
    except (OarError, OSError) as exc:
        print(f"[ERROR] {exc}", file=err)
        return 1


if __name__ == "__main__":
    sys.exit(main())
