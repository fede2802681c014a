"""The model: enums and frozen dataclasses shared by every layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class CampaignState(StrEnum):
    IN_TREATMENT = "in_treatment"
    PAUSED = "paused"
    TERMINATED = "terminated"
    CANCELLED = "cancelled"


class CampaignType(StrEnum):
    DEFAULT = "default"
    TEST = "test"


class JobState(StrEnum):
    """A job's life in cigri (CiGri's names where it has one)."""

    TO_LAUNCH = "to_launch"  # waiting for the metascheduler
    LAUNCHING = "launching"  # chosen and recorded in a batch, submission in progress
    SUBMITTED = "submitted"  # accepted by the resource manager, waiting there (CiGri: remote_waiting)
    RUNNING = "running"
    TERMINATED = "terminated"  # ended with exit status 0
    EVENT = "event"  # failed; waits for the user on an open event
    CANCELLED = "cancelled"  # griddel
    SKIPPED = "skipped"  # a test campaign's jobs beyond its one job per cluster

    @property
    def active(self) -> bool:
        return self in ACTIVE_JOB_STATES


ACTIVE_JOB_STATES = (JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING)
FINAL_JOB_STATES = (JobState.TERMINATED, JobState.CANCELLED, JobState.SKIPPED)


class RemoteState(StrEnum):
    """What a resource manager says of one of its jobs. Every adapter translates its own states into
    these through an explicit table; a state it does not know is UNKNOWN, never "done"."""

    PENDING = "pending"
    RUNNING = "running"
    EXITED = "exited"  # ended on its own; exit_code says how
    KILLED = "killed"  # ended by the RM: walltime, preemption, admin cancel (cigri resubmits)
    UNKNOWN = "unknown"  # not listed, or a state without a translation: ask again later


class KillCause(StrEnum):
    """Why a resource manager ended a job it was running or holding, as its adapter reads the RM's own words
    (each adapter's table is in its module). A word it does not know is OTHER, never an error."""

    PREEMPTED = "preempted"  # a best-effort job evicted to make room (OAR BESTEFFORT_KILL, Slurm PREEMPTED)
    WALLTIME = "walltime"  # it reached its walltime (OAR WALLTIME, Slurm TIMEOUT)
    MEMORY = "memory"  # it used more memory than it was given (Slurm OUT_OF_MEMORY)
    ADMIN = "admin"  # an administrator or a user cancelled it (OAR EXTERMINATE, Slurm CANCELLED)
    OTHER = "other"  # a node failure, a boot failure, a word without a translation


class EventClass(StrEnum):
    CLUSTER = "cluster"
    CAMPAIGN = "campaign"
    JOB = "job"


class EventState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class EventCode(StrEnum):
    EXIT_ERROR = "EXIT_ERROR"  # job exited non-zero (not 66)
    RESUBMIT_LIMIT = "RESUBMIT_LIMIT"  # ran its attempts (or its resumes), each end in the message
    PROLOGUE_ERROR = "PROLOGUE_ERROR"
    EPILOGUE_ERROR = "EPILOGUE_ERROR"
    SUBMIT_ERROR = "SUBMIT_ERROR"  # the RM rejected the campaign's settings
    CLUSTER_UNREACHABLE = "CLUSTER_UNREACHABLE"
    TEST_NOT_STARTED = "TEST_NOT_STARTED"  # a test job did not start on that cluster: the test ends there
    BLACK_HOLE = "BLACK_HOLE"  # the campaign's jobs end at once on that cluster (the sink effect): blacklisted
    BLACKLIST = "BLACKLIST"  # a campaign kept off a cluster by a job's error there (its parent): until fixed
    ADMIN_BLACKLIST = "ADMIN_BLACKLIST"  # the admin keeps every campaign off a cluster: until --unblacklist
    FAILURE_RATE = "FAILURE_RATE"  # too many of the campaign's last ends failed: it is paused until fixed
    OUTPUT_ERROR = "OUTPUT_ERROR"  # a terminated job's declared output is missing or arrived damaged
    WORK_GENERATOR = "WORK_GENERATOR"  # the campaign's work_generator failed for a file: nothing added for it
    INPUT_CHANGED = "INPUT_CHANGED"  # an input file changed or vanished since submission: campaign paused until fixed
    MANUAL = "MANUAL"  # the admin marked a terminated job's result bad (gridevents --mark-job-event): until fixed


@dataclass(frozen=True)
class Campaign:
    id: int
    name: str
    user: str
    type: CampaignType
    state: CampaignState
    submitted_at: float
    ended_at: float | None
    nb_jobs: int
    jdl: dict


@dataclass(frozen=True)
class Job:
    id: int
    campaign_id: int
    name: str
    params: str
    state: JobState
    cluster: str | None
    remote_id: str | None
    exit_code: int | None
    submitted_at: float | None
    started_at: float | None
    ended_at: float | None
    resubmits: int
    preemptions: int = 0  # times the metascheduler took it back to run it later (never a failure)
    resumes: int = 0  # times it went back preempted by its RM or checkpointed (never a failure nor an attempt)
    checkpoint_cluster: str | None = None  # the cluster holding its checkpoint, where it resumes


@dataclass(frozen=True)
class DataFile:
    """One input file of a campaign: its key (its name under the campaign's data_source, also its name in
    the job's CIGRI_INPUT_DIR), its size in bytes and its sha256 (hex)."""

    key: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Event:
    id: int
    cls: EventClass
    code: EventCode
    state: EventState
    cluster: str | None
    campaign_id: int | None
    job_id: int | None
    message: str
    created_at: float
    closed_at: float | None
    parent_id: int | None = None  # its cause (a blacklist: its first cause; a later cause: its blacklist)
    closed_by: str | None = None  # why it was closed: who fixed it, or what did


@dataclass(frozen=True)
class Cluster:
    name: str
    adapter: str
    config: dict


@dataclass(frozen=True)
class JobSpec:
    """One job as handed to a resource manager. Paths may hold ``{HOME}``/``~``: the adapter expands
    them to the home directory on the cluster that runs the job."""

    job_id: int
    campaign_id: int
    name: str
    argv: tuple[str, ...]
    directory: str
    walltime: int
    slots: int = 1
    resources: str = "/resource_id=1"
    properties: str = ""
    project: str = ""
    best_effort: bool = False
    user: str = ""
    env: dict = field(default_factory=dict)
    resume: bool = False  # it resumes from its checkpoint (CIGRI_RESUME=1)
    checkpoint_signal: str = ""  # sent checkpoint_grace seconds before the walltime ("USR2"; "": none)
    checkpoint_grace: int = 0
    inputs: tuple[str, ...] = ()  # keys of its input files, staged in CIGRI_INPUT_DIR (env) before it is submitted
    job_types: tuple[str, ...] = ()  # the JDL's cluster_job_type: OAR's -t types (adapters with job_types only)

    def for_job(self, job_id: int, name: str, argv: tuple[str, ...], inputs: tuple[str, ...]) -> JobSpec:
        """This spec for one job of a batch: ``replace(self, job_id=..., name=..., argv=..., inputs=...)``
        without the generated ``__init__``, which sets each of the 18 fields through ``object.__setattr__``
        (frozen): a batch makes one per job, and that was most of the runner's own cost."""
        spec = object.__new__(JobSpec)
        values = spec.__dict__
        values.update(self.__dict__)  # the fields in their order, then this job's
        values["job_id"], values["name"], values["argv"], values["inputs"] = job_id, name, argv, inputs
        return spec


@dataclass(frozen=True)
class RemoteStatus:
    remote_id: str
    state: RemoteState
    exit_code: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    reason: str = ""
    returned: bool = False  # KILLED before it began (its pack ended first): back to the bag, no failure
    cause: KillCause | None = None  # why the RM ended it, when it did (set for KILLED, and for an OOM exit)

    @staticmethod
    def of(
        remote_id: str,
        state: RemoteState,
        exit_code: int | None,
        started_at: float | None,
        ended_at: float | None,
        reason: str,
        cause: KillCause | None,
    ) -> RemoteStatus:
        """``RemoteStatus(...)`` (not returned) without the generated ``__init__``, which sets each field
        through ``object.__setattr__`` (frozen): the simulator reports one per change of every job."""
        status = object.__new__(RemoteStatus)
        status.__dict__.update(
            remote_id=remote_id,
            state=state,
            exit_code=exit_code,
            started_at=started_at,
            ended_at=ended_at,
            reason=reason,
            returned=False,
            cause=cause,
        )
        return status


@dataclass(frozen=True)
class Capacity:
    total: int  # slots the cluster has
    used: int  # slots busy, by anyone
    grid_used: int  # of which cigri's jobs
    queued: int  # cigri's jobs waiting in the RM's queue
    down: int = 0  # slots the RM reports down, drained or failing: not in total (gridclusters -u shows them)

    @property
    def free(self) -> int:
        return max(0, self.total - self.used)
