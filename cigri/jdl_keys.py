"""The JDL's keys as a table: what cigri-jdl(5) documents and what a test holds against :mod:`cigri.jdl`.

One row per key :func:`cigri.jdl.parse` accepts: its value's type, its default (as a JDL writer would spell it;
empty when the key is required or has none), whether a cluster may set it for itself (``per_cluster``: a
top-level value is then the default of every cluster that does not) and one line saying what it does.
A key added to the parser without a row here fails ``tests/test_man.py``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JdlKey:
    name: str
    type: str
    default: str
    per_cluster: bool
    description: str


KEYS: tuple[JdlKey, ...] = (
    # campaign-wide keys (jdl.GLOBAL_ONLY)
    JdlKey("name", "string", "", False, "The campaign's name (required)."),
    JdlKey(
        "clusters",
        "mapping",
        "",
        False,
        "Cluster names to their settings (required, not empty); each may set any per-cluster key.",
    ),
    JdlKey(
        "params", "list of strings", "", False, "The param lines, one job each (one of params, param_file, nb_jobs)."
    ),
    JdlKey(
        "param_file",
        "path",
        "",
        False,
        "A file of param lines, read at submission; relative to the JDL's directory, {HOME} is the submitter's home.",
    ),
    JdlKey(
        "nb_jobs",
        "integer",
        "",
        False,
        "That many jobs, their params being 0 to nb_jobs-1 (at most 100000000; 0: none yet, gridsub -c adds them).",
    ),
    JdlKey(
        "jobs_type",
        "normal",
        "normal",
        False,
        "CiGri's kind of campaign: normal, the only one built (desktop_computing is refused, as CiGri did).",
    ),
    JdlKey("priority", "integer", "0", False, "Campaigns with a higher priority are served first."),
    JdlKey("class", "string", "", False, "The campaign's class, for the class-load scheduling strategy."),
    JdlKey(
        "finalize",
        "boolean",
        "false",
        False,
        "At its end, replicate its remaining jobs on free slots; the first copy to succeed wins.",
    ),
    JdlKey(
        "max_attempts",
        "integer",
        "",
        False,
        "How many times a job may run when it asks to run again (default: resubmit.max_attempts, 3).",
    ),
    JdlKey(
        "data_source",
        "path",
        "",
        False,
        "A local folder holding the input files (~, {HOME}, {JDL_DIR}; relative to the JDL); URLs are refused.",
    ),
    JdlKey(
        "input_files",
        "template or list",
        "",
        False,
        "Each job's files under data_source ({1}, {2}... its param words, {name}); staged into the cluster's "
        "cache, found in $CIGRI_INPUT_DIR.",
    ),
    JdlKey(
        "output_file",
        "template or list",
        "",
        False,
        "Each job's outputs under its exec_directory, gathered after it ends.",
    ),
    JdlKey(
        "output_destination",
        "path",
        "",
        False,
        "The local folder outputs are copied to, in DIR/<job name>/, checksums compared.",
    ),
    JdlKey(
        "output_gathering_method",
        "copy, scp or none",
        "copy",
        False,
        "How outputs come back: copy (the default with output_file; scp, CiGri's name, is the same copy through "
        "the cluster's transport) or none; CiGri's iRods and collector are refused.",
    ),
    JdlKey(
        "work_generator",
        "command",
        "",
        False,
        "Run with a file's name when a cluster holding it has no work for it: each output line is a new job's "
        "param line; exit 3 means no more work for that file.",
    ),
    # per-cluster keys (jdl.CLUSTER_DEFAULTS)
    JdlKey("exec_file", "path", "", True, "The program each job runs, followed by its param line (required)."),
    JdlKey("exec_directory", "path", "{HOME}", True, "The directory jobs start in on the cluster."),
    JdlKey(
        "resources",
        "string",
        "/resource_id=1",
        True,
        "Each job's resources, OAR style: /nodes=1/core=4. OAR's own syntax (groups joined by +, {...} filters: "
        "nodes=3+licence=2) goes to OAR's -l as written; slots are counted on its first group; other clusters "
        "refuse it.",
    ),
    JdlKey("walltime", "HH:MM:SS or seconds", "01:00:00", True, "Each job's walltime (at most a year)."),
    JdlKey("properties", "string", "", True, "Resource properties the job needs (OAR's -p; Slurm constraints)."),
    JdlKey("project", "string", "", True, "The RM project or account the jobs are charged to."),
    JdlKey(
        "type",
        "best-effort|normal",
        "best-effort",
        True,
        "Best-effort jobs may be killed when others need room (CiGri's semi-best-effort and nightly are refused).",
    ),
    JdlKey("test_mode", "boolean", "false", True, "A test campaign: one job per cluster runs, the others are skipped."),
    JdlKey("max_jobs", "integer", "", True, "At most this many of the campaign's jobs at once on the cluster."),
    JdlKey(
        "prologue",
        "list of strings",
        "[]",
        True,
        "Shell lines run once on the cluster before the first job, by bash where the cluster has it, else sh.",
    ),
    JdlKey(
        "epilogue",
        "list of strings",
        "[]",
        True,
        "Shell lines run once on the cluster after the last job, by bash where the cluster has it, else sh.",
    ),
    JdlKey("prologue_walltime", "HH:MM:SS or seconds", "", True, "The prologue's walltime."),
    JdlKey("epilogue_walltime", "HH:MM:SS or seconds", "", True, "The epilogue's walltime."),
    JdlKey(
        "environment",
        "mapping",
        "{}",
        True,
        "Variables every job gets (CIGRI_* are cigri's own and refused). They reach the jobs through no "
        "command line, and show as *** in cigri's outputs when their names say they are secrets (see "
        "gridstat(1)); in the campaign's events and errors, every value of 8 characters or more is masked too.",
    ),
    JdlKey(
        "temporal_grouping",
        "boolean or seconds",
        "false",
        True,
        "Short jobs run in sequence inside one RM job (true, or the seconds one RM job should run).",
    ),
    JdlKey("dimensional_grouping", "boolean", "false", True, "One RM job per node running one job per core."),
    JdlKey(
        "retry_resources",
        "mapping",
        "",
        True,
        "{walltime: FACTOR, max_walltime: HH:MM:SS}: a job killed at its walltime asks FACTOR times more.",
    ),
    JdlKey(
        "checkpointing_type",
        "signal|exit-code|none",
        "",
        True,
        "How a job checkpoints (resumed with CIGRI_RESUME=1); none, CiGri's default, is no checkpointing.",
    ),
    JdlKey("checkpointing_signal", "signal name", "USR2", True, "With signal: the signal sent before the walltime."),
    JdlKey("checkpointing_grace", "seconds", "300", True, "With signal: how long before the walltime it is sent."),
    JdlKey(
        "checkpointing_exit_code",
        "integer",
        "68",
        True,
        "The exit status meaning checkpointed, resume me (default: configured).",
    ),
    JdlKey(
        "cluster_job_type",
        "string",
        "",
        True,
        "CiGri's OAR job types (-t), joined by commas, for the clusters whose adapter takes them; others refuse it.",
    ),
)
