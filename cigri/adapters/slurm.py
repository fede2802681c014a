"""Slurm: what both Slurm adapters share (state table, resource mapping, the array job script), and
``slurm-ssh``, which drives Slurm's commands through a transport (ssh, or local on a login node).

A batch is one ``sbatch --array=1-N`` job named after the batch key. Task *i* runs spec *i*: the job
script reads line *i* of the batch's args file (staged on the cluster), whose words were quoted here,
and ``exec``\\ s them, so nothing in a param line is ever expanded by a shell. slurm-ssh stages both files
(0600) with a script it sends on stdin: the job script exports the jobs' environment, which must be in no
command line. Remote ids are ``<array job id>_<i>``, recorded at submission: they map to jobs exactly.
slurm-ssh records the array id on the cluster in the submission's round trip, and submits a batch key at
most once, even when a killed pass's ssh client is still submitting it (:func:`~.transport.at_most_once`).

Both adapters give ``activity()`` a token (:class:`Activity`) that changes when one of cigri's tasks that
was pending or running has ended, so that a looping almighty wakes as soon as a job ends instead of at
its next period.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Sequence

from ..errors import AdapterError, ConfigError, JdlError, SubmitError
from ..jdl import format_walltime, plain_resources, property_terms
from ..model import Capacity, Cluster, JobSpec, KillCause, RemoteState, RemoteStatus
from . import AdapterContext, Option, batch_environment, expand_home, exports
from .files import FILE_OPTIONS, RemoteFiles
from .packing import RemotePackFiles
from .reading import epoch, whole
from .transport import CommandRunner, RemoteCommands, at_most_once, here_document, read_load, runner_for, shell

# Slurm job states (squeue %T / sacct State / REST job_state), translated. Anything else is UNKNOWN.
STATES: dict[str, RemoteState] = {
    "PENDING": RemoteState.PENDING,
    "CONFIGURING": RemoteState.PENDING,
    "REQUEUED": RemoteState.PENDING,
    "REQUEUE_HOLD": RemoteState.PENDING,
    "REQUEUE_FED": RemoteState.PENDING,
    "RESV_DEL_HOLD": RemoteState.PENDING,
    "RUNNING": RemoteState.RUNNING,
    "COMPLETING": RemoteState.RUNNING,
    "SUSPENDED": RemoteState.RUNNING,
    "STOPPED": RemoteState.RUNNING,
    "SIGNALING": RemoteState.RUNNING,
    "STAGE_OUT": RemoteState.RUNNING,
    "RESIZING": RemoteState.RUNNING,
    "COMPLETED": RemoteState.EXITED,
    "FAILED": RemoteState.EXITED,
    "OUT_OF_MEMORY": RemoteState.EXITED,  # the job's own doing: an event for the user
    "SPECIAL_EXIT": RemoteState.EXITED,
    "CANCELLED": RemoteState.KILLED,  # admin or user scancel: resubmitted unless cigri asked for it
    "TIMEOUT": RemoteState.KILLED,  # walltime
    "PREEMPTED": RemoteState.KILLED,
    "NODE_FAIL": RemoteState.KILLED,
    "BOOT_FAIL": RemoteState.KILLED,
    "DEADLINE": RemoteState.KILLED,
    "REVOKED": RemoteState.KILLED,
}

# why Slurm ended a job, from its state's name; any other name (a state Slurm adds later) is OTHER
CAUSES: dict[str, KillCause] = {
    "PREEMPTED": KillCause.PREEMPTED,  # a partition with PreemptMode=CANCEL (REQUEUE shows PENDING again)
    "TIMEOUT": KillCause.WALLTIME,
    "DEADLINE": KillCause.WALLTIME,  # --deadline reached: the time it was given is over
    "OUT_OF_MEMORY": KillCause.MEMORY,
    "CANCELLED": KillCause.ADMIN,  # scancel, by an administrator or the user (cigri's own are known to it)
}

MAX_ARRAY_SIZE = 4_000_001  # the largest MaxArraySize Slurm takes: no array has more tasks

# sbatch and squeue messages that mean "the controller is not there", not "your job is wrong"
UNREACHABLE = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|"
    r"Zero Bytes were transmitted|Communication connection failure",
    re.I,
)


def exit_status(raw: int | None) -> int | None:
    """A wait status (squeue exit_code, REST exit_code) as a shell would report it."""
    if raw is None or raw < 0 or raw > 0xFFFF:  # above 16 bits Slurm reports an error number (4021: JobLaunchFailure)
        return None
    signal = raw & 0x7F
    return 128 + signal if signal else raw >> 8


def translate(state: str, raw_exit: int | None = None, reason: str = "") -> tuple[RemoteState, int | None, str]:
    """(RemoteState, exit code, reason) of a Slurm state; CANCELLED+ etc. lose their suffix."""
    words = state.split()
    name = words[0].rstrip("+").upper() if words else ""
    remote = STATES.get(name, RemoteState.UNKNOWN)
    code = exit_status(raw_exit) if remote == RemoteState.EXITED else None
    if name == "OUT_OF_MEMORY":  # Slurm records 0:125 or 0:0 here: report it as the kernel's kill would
        code = 137
    if remote == RemoteState.EXITED and code is None and not reason:
        reason = f"{name.lower()} without an exit status"
    return remote, code, (name.lower() if remote == RemoteState.KILLED else reason)


def kill_cause(state: str) -> KillCause:
    """Why Slurm ended a job in ``state`` (squeue %T, sacct State, REST job_state; ``CANCELLED by 0``,
    ``CANCELLED+`` lose their suffix): see :data:`CAUSES`, OTHER for any other word."""
    name = state.split()[0].rstrip("+").upper() if state.split() else ""
    return CAUSES.get(name, KillCause.OTHER)


def ended_by_slurm(state: str, remote: RemoteState) -> KillCause | None:
    """The kill cause of a task Slurm killed, or that ran out of memory (EXITED: the job's own doing, but
    the cause says so); None for the others."""
    if remote == RemoteState.KILLED or state.upper().startswith("OUT_OF_MEMORY"):
        return kill_cause(state)
    return None


def resource_options(resources: str, path: str, who: str = "a Slurm cluster") -> list[str]:
    """OAR-style resources as sbatch options (see grid-gridclusters(1)); OAR's own syntax is refused (``who``:
    the cluster, as the error names it)."""
    parsed = plain_resources(resources, path, who)
    nodes = parsed.get("nodes") or parsed.get("node") or parsed.get("host") or parsed.get("network_address")
    cores = parsed.get("core", 1) * parsed.get("cpu", 1)
    if nodes:
        return [f"--nodes={nodes}", f"--ntasks-per-node={cores}"]
    return ["--ntasks=1", f"--cpus-per-task={cores}"]


def constraint(properties: str, path: str) -> str | None:
    """OAR properties ``name='value' AND ...`` as a Slurm constraint ``value&...``; anything else is refused."""
    terms = property_terms(properties)
    if isinstance(terms, str):
        raise JdlError(path, f"Slurm takes properties of the form name='value' (joined by AND), not {terms!r}")
    return "&".join(value for _, value in terms) or None


def batch_options(spec: JobSpec, config: dict, home: str, path: str) -> list[str]:
    """sbatch options shared by every task of a batch (all its specs share these settings)."""
    options = [
        *resource_options(spec.resources, f"{path}.resources"),
        f"--time={format_walltime(spec.walltime)}",
        f"--chdir={expand_home(spec.directory, home)}",
    ]
    if spec.project:
        options.append(f"--account={spec.project}")
    if spec.checkpoint_signal:  # to the batch shell, which the job script turns into the job (exec)
        options.append(f"--signal=B:{spec.checkpoint_signal}@{spec.checkpoint_grace}")
    features = constraint(spec.properties, f"{path}.properties")
    if features:
        options.append(f"--constraint={features}")
    partition = config.get("partition")
    if spec.best_effort and (config.get("besteffort_partition") or config.get("besteffort_qos")):
        partition = config.get("besteffort_partition") or partition
        if config.get("besteffort_qos"):
            options.append(f"--qos={config['besteffort_qos']}")
    if partition:
        options.append(f"--partition={partition}")
    return options


def args_lines(specs: Sequence[JobSpec], home: str) -> str:
    """Line i: the quoted words of task i (job id, job name, then the command and its arguments)."""
    lines = []
    for spec in specs:
        argv = [expand_home(spec.argv[0], home), *spec.argv[1:]]
        words = [str(spec.job_id), spec.name, *argv]
        if any("\n" in w or "\r" in w for w in words):
            raise SubmitError(f"job {spec.job_id}: a word holds a line break, which the job script cannot carry")
        lines.append(" ".join(shlex.quote(w) for w in words))
    return "\n".join(lines) + "\n"


def job_script(spec: JobSpec, home: str, args: str, nodes: str) -> str:
    """The array job script. ``args`` is a shell command printing the args lines: ``cat FILE``, or a
    ``printf`` of them when the script must carry them itself (REST). It runs inside ``$(...)``, where
    a here-document's end line would not be found.

    The task's node file is ``<nodes><array id>_<task>.nodes``: ``nodes`` is the start of a path in
    cigri's own folder on the cluster, beside the task's output. Not in the node's /tmp: the script
    removes it when the job ends, cancelled or preempted included, but no trap runs on the SIGKILL
    slurmstepd may send (after KillWait, or at once on a preemption), and a file left there is nobody's
    to clean; in cigri's folder, the next run of the same task overwrites it."""
    workdir = expand_home(spec.directory, home)
    node_file = shlex.quote(nodes) + '"${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}_${SLURM_ARRAY_TASK_ID}.nodes"'
    return f"""#!/bin/sh
# cigri array job: task N runs the Nth args line; its words were quoted by cigri, so eval only
# undoes that quoting and nothing in them is expanded.
line=$({args} | sed -n "${{SLURM_ARRAY_TASK_ID}}p")
[ -n "$line" ] || {{ echo "cigri: no args line $SLURM_ARRAY_TASK_ID" >&2; exit 1; }}
eval "set -- $line"
CIGRI_JOB_ID=$1 CIGRI_JOB_NAME=$2
shift 2
export CIGRI_JOB_ID CIGRI_JOBID="$CIGRI_JOB_ID" CIGRI_JOB_NAME CIGRI_JOBNAME="$CIGRI_JOB_NAME"
{exports(batch_environment(spec, workdir))}
# the node file (0600) is removed however the job ends on Slurm's SIGTERM: on its own, or cancelled,
# preempted or out of walltime; its name and the traps come first, so that a job cancelled as it starts
# leaves no file behind
CIGRI_NODE_FILE={node_file}
trap 'rm -f "$CIGRI_NODE_FILE"' EXIT
trap 'exit 143' TERM
(umask 077; scontrol show hostnames "$SLURM_JOB_NODELIST" > "$CIGRI_NODE_FILE" 2>/dev/null ||
  hostname > "$CIGRI_NODE_FILE") || exit 1
export CIGRI_NODE_FILE CIGRI_NODEFILE="$CIGRI_NODE_FILE"
{_run_job(spec.checkpoint_signal)}
"""


def _run_job(checkpoint_signal: str) -> str:
    """The job script's last lines: run the job; a job checkpointing by signal runs in the background, and
    the checkpoint signal Slurm sends the batch shell (``--signal=B:...``) is passed on to it; the script
    then waits for the job's own end and exits with its status."""
    if not checkpoint_signal:
        return '"$@"'
    return "\n".join(
        [
            # a wait the trap interrupts returns 128 + the signal: wait again for the job's own status
            f"trap 'kill -{checkpoint_signal} \"$child\"; signalled=1' {checkpoint_signal}",
            '"$@" &',
            "child=$!",
            'while :; do signalled=; wait "$child"; status=$?; [ -z "$signalled" ] && break; done',
            'exit "$status"',
        ]
    )


LISTING_TTL = 0.5  # seconds a read of the cluster serves again: the stages of one pass share one read
ACTIVITY_EVERY = 0.5  # seconds between two probes of a looping almighty's wake-up checks, at least

# scontrol's answers about a job that is no longer there to hold or release: not an error
GONE = re.compile(r"Invalid job id|already finished|already completing or completed|slurm_suspend error", re.I)
CONTROL_CHUNK = 500  # job ids per scontrol command line


_FIELD = re.compile(r"(?:^|\s)([A-Za-z][\w/:]*)=(.*?)(?=\s+[A-Za-z][\w/:]*=|\s*$)")


def scontrol_fields(line: str) -> dict[str, str]:
    """``scontrol -o show job``'s one line as Key -> value, in order (values may hold spaces)."""
    return {match.group(1): match.group(2) for match in _FIELD.finditer(line.strip())}


def live(state: str) -> bool:
    """Is a task in this Slurm state still to end (pending or running)?"""
    return translate(state)[0] in (RemoteState.PENDING, RemoteState.RUNNING)


class Listing:
    """The cluster's listing of cigri's jobs, read at most once per ``ttl`` seconds: the updator and the
    metascheduler of one pass share one read. Any change cigri makes (submit, cancel) drops it."""

    def __init__(self, read: Callable[[], list], clock, ttl: float = LISTING_TTL):
        self.read, self.clock, self.ttl = read, clock, ttl
        self.value: list | None = None
        self.at = 0.0

    def get(self) -> list:
        now = self.clock.now()
        if self.value is None or now - self.at > self.ttl:
            self.value, self.at = self.read(), now
        return self.value

    def drop(self) -> None:
        self.value = None


class Activity:
    """The token ``activity()`` returns: how many probes found that a task cigri follows has ended.

    cigri follows the tasks it submitted and those ``states()`` last reported pending or running: exactly
    the jobs it holds active, so that news always concerns a job the next pass collects (and takes a new
    token for). A read of the cluster (:meth:`seen`) stops following the tasks it shows ended or no longer
    lists; only a probe's read counts them, so what a pass read itself is not news once the pass is over,
    and a submission is not news, its end is. :meth:`token` probes at most once per ``every`` seconds
    after the last read, and not at all while cigri follows nothing: a waiting almighty makes one small
    read of its own jobs now and then, and none when it has nothing on the cluster."""

    def __init__(self, clock, every: float = ACTIVITY_EVERY):
        self.clock, self.every = clock, every
        self.live: set[str] = set()
        self.ended = 0
        self.read_at = float("-inf")
        self.probing = False

    def seen(self, live_now: Iterable[str], within: str = "") -> None:
        """A read showed ``live_now`` pending or running, of the tasks whose ids start with ``within`` (the
        read of one array: ``<array id>_``; all of them by default)."""
        gone = {task for task in self.live if task.startswith(within)} - set(live_now)
        if self.probing and gone:
            self.ended += 1
        self.live -= gone
        self.read_at = self.clock.now()

    def reported(self, statuses: Iterable[RemoteStatus]) -> None:
        """What ``states()`` told cigri: it follows the tasks pending or running, and no others."""
        for status in statuses:
            if status.state in (RemoteState.PENDING, RemoteState.RUNNING):
                self.live.add(status.remote_id)
            else:
                self.live.discard(status.remote_id)

    def submitted(self, remote_ids: Iterable[str]) -> None:
        self.live.update(remote_ids)

    def cancelled(self, remote_ids: Iterable[str]) -> None:
        self.live.difference_update(remote_ids)

    def token(self, probe: Callable[[], object]) -> int:
        """The token, after a probe (``probe`` reads the cluster, which calls :meth:`seen`) if one is due.
        A probe that fails is no news: the next pass meets the failure and reports it."""
        if self.live and self.clock.now() - self.read_at >= self.every:
            self.probing = True
            try:
                probe()
            except AdapterError:
                self.read_at = self.clock.now()
            finally:
                self.probing = False
        return self.ended


def check_batch(cluster: str, specs: Sequence[JobSpec], max_batch: int) -> bool:
    """False for an empty batch; refuses one larger than an array job may be."""
    if len(specs) > max_batch:
        raise ConfigError(f"{cluster}: a batch of {len(specs)} jobs exceeds max_batch {max_batch}")
    return bool(specs)


SLURM_OPTIONS = (
    Option("partition", str, "Slurm partition for normal jobs (default: the cluster's default)"),
    Option("besteffort_partition", str, "Slurm partition for best-effort (preemptible) jobs"),
    Option("besteffort_qos", str, "Slurm QOS for best-effort jobs"),
    Option("queue_depth", int, "jobs cigri may queue beyond the free slots (default 100)", minimum=0),
    Option("max_batch", int, "tasks per array job at most (below the cluster's MaxArraySize; default 1000)", minimum=1),
    Option("timeout", int, "seconds to wait for one answer of the cluster (default 20)", minimum=1),
    Option(
        "accounting",
        str,
        "sacct: ask slurmdbd about jobs slurmctld forgot (default); none: never",
        choices=("sacct", "none"),
    ),
)


class SlurmSsh(RemotePackFiles, RemoteFiles, RemoteCommands):
    """Slurm's commands (sbatch, squeue, scancel, sinfo) through ssh, or locally on a login node."""

    unreachable = UNREACHABLE
    options = (
        Option("host", str, "ssh: the cluster's login host (an ~/.ssh/config alias works); none: run locally"),
        Option("port", int, "ssh: port", minimum=1),
        Option("user", str, "ssh: login name"),
        Option("identity_file", str, "ssh: private key for cron, which has no agent"),
        Option("bin_dir", str, "where the cluster's Slurm commands are (default: found on its PATH)"),
        Option("remote_dir", str, "cigri's folder on the cluster for job scripts and outputs (default ~/.cigri)"),
        *SLURM_OPTIONS,
        *FILE_OPTIONS,
    )

    def __init__(self, cluster: Cluster, context: AdapterContext, runner: CommandRunner | None = None):
        self.name = cluster.name
        self.config = cluster.config
        self.clock = context.clock
        self.runner = runner or runner_for(cluster.config)
        self.queue_depth = int(cluster.config.get("queue_depth", 100))
        self.max_batch = int(cluster.config.get("max_batch", 1000))
        self.best_effort = bool(cluster.config.get("besteffort_partition") or cluster.config.get("besteffort_qos"))
        self._home: str | None = None
        self._listing = Listing(self._read_our_jobs, context.clock)
        self._activity = Activity(context.clock)

    # ---- plumbing -------------------------------------------------------------------------------

    def _our_jobs(self) -> list[list[str]]:
        return self._listing.get()

    def _read_our_jobs(self) -> list[list[str]]:
        """Every task of this user's cigri jobs that Slurm still lists, one bulk query."""
        fields = "JobArrayID:|,ArrayJobID:|,State:|,Reason:|,exit_code:|,StartTime:|,EndTime:|,NumCPUs:|,Name:"
        result = self._run([self._cmd("squeue"), "--me", "-h", "-r", "-t", "all", "-O", fields])
        if not result.ok:
            raise AdapterError(f"{self.name}: {result.describe()}")
        rows = [line.split("|") for line in result.stdout.splitlines() if line.strip()]
        # a line of other than the nine fields asked is not understood: its task stays UNKNOWN
        ours = [[c.strip() for c in row] for row in rows if len(row) == 9 and row[8].strip().startswith("cigri.")]
        self._activity.seen(row[0] for row in ours if live(row[2]))
        return ours

    # ---- the contract ---------------------------------------------------------------------------

    def check(self, settings: dict, path: str) -> None:
        resource_options(settings["resources"], f"{path}.resources", f"the Slurm cluster {self.name!r}")
        constraint(settings.get("properties") or "", f"{path}.properties")

    def capacity(self) -> Capacity:
        argv = [self._cmd("sinfo"), "-h", "-o", "%C"]
        if self.config.get("partition"):
            argv += ["-p", self.config["partition"]]
        result = self._run(argv)
        if not result.ok:
            raise AdapterError(f"{self.name}: {result.describe()}")
        total = used = down = 0
        for line in result.stdout.split():
            counts = [whole(x) for x in line.split("/")]
            if len(counts) != 4 or None in counts or counts[2] > counts[3]:
                raise AdapterError(f"{self.name}: sinfo -o %C answered {line[:80]!r}, not allocated/idle/other/total")
            allocated, _idle, other, all_cpus = counts
            total += all_cpus - other
            used += allocated
            down += other
        grid_used = queued = 0
        for row in self._our_jobs():
            if row[2] == "RUNNING":
                grid_used += whole(row[7]) or 1
            elif row[2] == "PENDING":
                queued += 1
        return Capacity(total=total, used=used, grid_used=grid_used, queued=queued, down=down)

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        if not check_batch(self.name, specs, self.max_batch):
            return []
        folder = self.remote_dir
        args_file, script_file, ids_file = (f"{folder}/{batch_key}.{ext}" for ext in ("args", "sh", "ids"))
        script = job_script(specs[0], self.home, f"cat {shlex.quote(args_file)}", f"{folder}/out/")
        sbatch = [
            self._cmd("sbatch"),
            "--parsable",
            f"--array=1-{len(specs)}",
            f"--job-name={batch_key}",
            f"--output={folder}/out/%A_%a.out",
            f"--error={folder}/out/%A_%a.err",
            *batch_options(specs[0], self.config, self.home, f"clusters.{self.name}"),
            script_file,
        ]
        # one round trip: stage the args and the script, submit, and record the array id on the cluster
        # itself (HUP ignored), so that find_batch knows it even if cigri dies before reading the answer;
        # at most once per batch key, should the submission of a killed pass still be running. All of it on
        # stdin: the script carries the jobs' environment, which no command line may show
        args_in, args_lines_after = here_document(args_lines(specs, self.home))
        script_in, script_lines_after = here_document(script)
        steps = f"umask 077 && mkdir -p {shlex.quote(folder)}/out && " + at_most_once(
            args_file,
            ids_file,
            f"cat > {shlex.quote(args_file)} {args_in} && cat > {shlex.quote(script_file)} {script_in} && "
            f"trap '' HUP && {shlex.join(sbatch)} > {shlex.quote(ids_file)}.tmp < /dev/null && "
            f"mv {shlex.quote(ids_file)}.tmp {shlex.quote(ids_file)} && cat {shlex.quote(ids_file)}",
        )
        self._listing.drop()
        result = self._run_script(f"{steps}\n{args_lines_after}{script_lines_after}")
        if not result.ok:
            raise SubmitError(f"{self.name} refused the batch: {result.describe()}")
        array_id = result.stdout.strip().split(";")[0]
        if whole(array_id) is None:
            raise AdapterError(f"{self.name}: sbatch answered {result.stdout.strip()!r}")
        remote_ids = [f"{array_id}_{i}" for i in range(1, len(specs) + 1)]
        self._activity.submitted(remote_ids)
        return remote_ids

    def find_batch(self, batch_key: str) -> list[str] | None:
        folder = self.remote_dir
        quoted = shlex.quote(f"{folder}/{batch_key}")
        result = self._run(shell(f"[ -e {quoted}.ids ] && cat {quoted}.ids && wc -l < {quoted}.args || true"))
        words = result.stdout.split()
        array_id, tasks = (whole(words[0].split(";")[0]), whole(words[1])) if len(words) >= 2 else (None, None)
        if array_id is None or tasks is None or tasks > MAX_ARRAY_SIZE:
            return None
        return [f"{array_id}_{i}" for i in range(1, tasks + 1)]

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        out = {rid: RemoteStatus(rid, RemoteState.UNKNOWN) for rid in remote_ids}
        for task_id, _array, state, reason, raw_exit, start, end, _cpus, _name in self._our_jobs():
            if task_id in out:
                why = "" if reason in ("None", "(null)") else reason  # squeue's placeholders
                remote, code, why = translate(state, whole(raw_exit), why)
                cause = ended_by_slurm(state, remote)
                out[task_id] = RemoteStatus(task_id, remote, code, epoch(start), epoch(end), why, cause=cause)
        unknown = [rid for rid, status in out.items() if status.state == RemoteState.UNKNOWN]
        if unknown and self.config.get("accounting", "sacct") == "sacct":
            out.update(self._accounting(unknown))
        self._activity.reported(out.values())
        return out

    def _accounting(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        """What slurmdbd says of tasks slurmctld no longer lists; nothing when accounting is off."""
        argv = [
            self._cmd("sacct"),
            "-n",
            "-P",
            "-X",
            "-o",
            "JobID,State,ExitCode,Start,End",
            "-j",
            ",".join(remote_ids),
        ]
        result = self._run(argv)
        if not result.ok:
            return {}
        out = {}
        for line in result.stdout.splitlines():
            fields = line.split("|")
            if len(fields) < 5 or fields[0] not in remote_ids:
                continue
            code, _, signal = (whole(part) for part in fields[2].partition(":"))
            raw = (code << 8 | signal) if code is not None and signal is not None else None
            remote, exit_code, why = translate(fields[1], raw)
            if remote in (RemoteState.EXITED, RemoteState.KILLED):
                start, end, cause = epoch(fields[3]), epoch(fields[4]), ended_by_slurm(fields[1], remote)
                out[fields[0]] = RemoteStatus(fields[0], remote, exit_code, start, end, why, cause=cause)
        return out

    def details(self, remote_id: str) -> dict:
        """``scontrol -o show job``'s record of the task; once slurmctld forgot it (MinJobAge), sacct's, when
        the cluster has accounting."""
        result = self._run([self._cmd("scontrol"), "-o", "show", "job", remote_id])
        line = result.stdout.strip().splitlines()[0] if result.ok and result.stdout.strip() else ""
        if line:
            return scontrol_fields(line)
        if result.ok or "Invalid job id" in result.stderr:
            if self.config.get("accounting", "sacct") == "sacct":
                fields = "JobID,JobName,User,Partition,State,ExitCode,Submit,Start,End,Elapsed,NodeList,WorkDir"
                sacct = self._run([self._cmd("sacct"), "-P", "-X", "-o", fields, "-j", remote_id])
                rows = [line.split("|") for line in sacct.stdout.splitlines()] if sacct.ok else []
                if len(rows) > 1:
                    return dict(zip(rows[0], rows[1], strict=False))
            raise AdapterError(f"{self.name}: Slurm no longer holds job {remote_id} (slurmctld forgets ended jobs)")
        raise AdapterError(f"{self.name}: {result.describe()}")

    def cancel(self, remote_ids: Sequence[str]) -> None:
        if not remote_ids:
            return
        self._listing.drop()
        self._activity.cancelled(remote_ids)
        result = self._run([self._cmd("scancel"), *remote_ids])
        if not result.ok and "Invalid job id" not in result.stderr:
            raise AdapterError(f"{self.name}: {result.describe()}")

    def hold(self, remote_ids: Sequence[str]) -> None:
        """``scontrol uhold``: a hold the job's owner may release (plain ``hold`` by root is an admin hold)."""
        self._control("uhold", remote_ids)

    def release(self, remote_ids: Sequence[str]) -> None:
        self._control("release", remote_ids)

    def _control(self, verb: str, remote_ids: Sequence[str]) -> None:
        """``scontrol <verb>`` on tasks, in bulk; tasks already over or gone are no error (running ones
        are left as they are by scontrol itself)."""
        self._listing.drop()
        for start in range(0, len(remote_ids), CONTROL_CHUNK):
            result = self._run([self._cmd("scontrol"), verb, *remote_ids[start : start + CONTROL_CHUNK]])
            if not result.ok and any(line.strip() and not GONE.search(line) for line in result.stderr.splitlines()):
                raise AdapterError(f"{self.name}: {result.describe()}")

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        path = f"{self.remote_dir}/out/{remote_id}.{'out' if stream == 'stdout' else 'err'}"
        argv = ["tail", "-n", str(lines), path] if lines else ["cat", path]
        result = self._run(argv)
        return result.stdout.rstrip("\n") if result.ok else ""

    # packing (cigri.adapters.packing): packed jobs' files beside the RM jobs' outputs
    def pack_dir(self) -> str:
        return f"{self.remote_dir}/out/packed"

    def _pack_stdout(self, remote_id: str) -> str:
        return f"{self.remote_dir}/out/{remote_id}.out"

    def _pack_run(self, argv: Sequence[str]):
        return self._run(argv)

    def node_cores(self) -> int:
        argv = [self._cmd("sinfo"), "-h", "-o", "%c"]
        if self.config.get("partition"):
            argv += ["-p", self.config["partition"]]
        result = self._run(argv)
        cores = [cores for word in result.stdout.split() if (cores := whole(word.rstrip("+")))]
        if not result.ok or not cores:
            raise AdapterError(f"{self.name}: cannot read the cores of its nodes: {result.describe()}")
        return min(cores)

    def activity(self) -> object:
        """A probe is one ``squeue --me`` (the read of a pass, which the next pass then shares)."""
        return self._activity.token(self._probe)

    def _probe(self) -> None:
        self._listing.drop()
        self._listing.get()

    def server_load(self, host: str) -> float:
        """The 1-minute load of a file-server host, read through the cluster's transport (a flow sensor)."""
        return read_load(self.runner, host, self.name)

    def close(self) -> None:
        self.runner.close()
