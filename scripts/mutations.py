#!/usr/bin/env python3
"""Run the mutations of the audit ("tests that catch their feature's removal") and say which tests catch them.

Each mutation removes or moves one feature: a file, its exact old text (found exactly once, else the list has
rotted and the run fails), the new text, and the tests that must fail on it (every one of them). For each, the
checkout's files (those git tracks, and the new ones it does not ignore: tests written but not yet committed) are
copied into a temporary folder, the mutation applied there, and its tests run there with the venv's python, the
copy's cigri imported (PYTHONPATH) instead of the editable install. The checkout is never touched; the temporary
folders are removed.

Before the mutations, every named test runs once on the unchanged copy: a test that fails there catches nothing.

Usage:
    .venv/bin/python scripts/mutations.py                 # every mutation
    .venv/bin/python scripts/mutations.py --only srpt-cutoff --only cursors-threshold
    .venv/bin/python scripts/mutations.py --list

Exit status: 0 when every mutation was caught; 1 when one survived, its old text was not found (once), or a run
failed otherwise (a named test missing, the unchanged tests failing).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
RUN_TIMEOUT = 1200  # seconds for one pytest run (pytest-timeout stops a hanging test well before)
SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)  # pytest's short summary (-rfE)


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the checkout
    old: str  # exact text, found exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest node ids, every one of which must fail on the mutation
    what: str  # the feature it removes, in one line


G = "tests/test_guards_"
FUZZ = "tests/test_fuzz.py::"

MUTATIONS: list[Mutation] = [
    # ---- scheduling ------------------------------------------------------------------------------------------
    Mutation(
        "srpt-cutoff",
        "cigri/scheduling/srpt.py",
        "long = est is not None and est > policy.cutoff",
        "long = est is not None and est >= policy.cutoff",
        (f"{G}scheduling.py::test_a_campaign_whose_estimate_is_exactly_the_cutoff_is_short",),
        "a campaign is long iff its estimate is above the cutoff (at it: short)",
    ),
    Mutation(
        "cursors-alone",
        "cigri/scheduling/cursors.py",
        "        if current.team == [cluster] and self.waiting(current):\n            return\n",
        "",
        (f"{G}scheduling.py::test_a_cluster_never_leaves_a_range_it_alone_serves_while_jobs_wait_there",),
        "a cluster never leaves a cursor it alone serves while jobs wait there",
    ),
    Mutation(
        "cursors-threshold",
        "cigri/scheduling/cursors.py",
        "not self.time_left(current) < 0.5 * self.time_left(target)",
        "not self.time_left(current) < 0.25 * self.time_left(target)",
        (f"{G}scheduling.py::test_a_cluster_whose_team_has_a_third_of_the_largest_time_left_moves",),
        "a cluster moves when its cursor's time left is under half the largest's",
    ),
    Mutation(
        "cursors-threshold-boundary",
        "cigri/scheduling/cursors.py",
        "not self.time_left(current) < 0.5 * self.time_left(target)",
        "not self.time_left(current) <= 0.5 * self.time_left(target)",
        (f"{G}scheduling.py::test_a_team_with_exactly_half_the_largest_time_left_stays",),
        "under half, not at half",
    ),
    # ---- flow and nikita ---------------------------------------------------------------------------------------
    Mutation(
        "flow-stalled-override",
        "cigri/cycle/flow.py",
        "        if reading.stalled:  # free slots only: the stall ends when one of cigri's jobs starts there\n"
        "            allowance = Allowance(0)\n",
        "",
        (
            f"{G}queues.py::test_a_stressed_cluster_gets_its_free_slots_and_nothing_queued_whatever_its_flow_answers",
            f"{G}queues.py::test_a_cluster_whose_queued_jobs_do_not_start_gets_its_free_slots_and_nothing_queued",
        ),
        "a stalled cluster gets its free slots and nothing queued, whatever its flow strategy answers",
    ),
    Mutation(
        "nikita-timeout-avoid",
        "cigri/cycle/nikita.py",
        "ctx.store.requeue(by_reason[Reason.TIMEOUT], count_resubmit=False, avoid=ctx.avoiding(cluster))",
        "ctx.store.requeue(by_reason[Reason.TIMEOUT], count_resubmit=False)",
        (f"{G}queues.py::test_jobs_killed_for_waiting_too_long_are_not_sent_back_to_that_cluster_soon",),
        "a job nikita kills after waiting too long avoids that cluster for a while",
    ),
    Mutation(
        "nikita-took-back",
        "cigri/cycle/nikita.py",
        "    if by_reason[Reason.FLOODING] or by_reason[Reason.TIMEOUT]:\n        ctx.store.took_back(cluster, now)\n",
        "",
        (f"{G}queues.py::test_after_a_timeout_the_clusters_queue_stays_closed_until_one_of_its_jobs_starts",),
        "after nikita takes jobs back from a queue, it stays closed until one of cigri's jobs starts there",
    ),
    # ---- black holes -----------------------------------------------------------------------------------------
    Mutation(
        "blackhole-unanswered-running",
        "cigri/cycle/blackhole.py",
        "if where != cluster and where in collected:",
        "if where != cluster:",
        (f"{G}blackhole.py::test_the_running_jobs_of_a_cluster_that_did_not_answer_are_no_reference",),
        "only the clusters that answered in the pass give their running jobs as figures",
    ),
    Mutation(
        "blackhole-healthy-filter",
        "cigri/cycle/blackhole.py",
        "            and (campaign_id not in healthy or started > healthy[campaign_id])\n",
        "",
        (
            f"{G}blackhole.py::test_short_ends_reported_with_a_normal_run_started_after_them_are_no_suspects",
            f"{G}blackhole.py::test_a_normal_run_clears_the_short_ends_of_jobs_started_before_it_in_later_passes_too",
        ),
        "a short end of a job started before the cluster's latest normal run is no suspect",
    ),
    Mutation(
        "blackhole-reference-boundary",
        "cigri/cycle/blackhole.py",
        "if median >= thresholds.reference}",
        "if median > thresholds.reference}",
        (f"{G}blackhole.py::test_a_reference_exactly_ratio_times_seconds_is_enough",),
        "a median elsewhere of ratio x seconds is a reference",
    ),
    Mutation(
        "blackhole-note-health-ends",
        "cigri/cycle/blackhole.py",
        "    ctx.store.note_health([(campaign_id, cluster, started) for campaign_id, started in sorted(latest",
        "    (lambda *_: None)([(campaign_id, cluster, started) for campaign_id, started in sorted(latest",
        (
            f"{G}blackhole.py::test_a_normal_run_clears_the_short_ends_of_jobs_started_before_it_in_later_passes_too",
            f"{G}blackhole.py::test_a_normal_run_clears_the_suspects_of_earlier_passes",
        ),
        "a normal end is remembered: it clears the suspects started before it, now and in later passes",
    ),
    Mutation(
        "blackhole-note-health-running",
        "cigri/cycle/blackhole.py",
        "    if seen:\n        with ctx.store.transaction():\n            ctx.store.note_health(seen)\n",
        "",
        (
            "tests/test_blackhole.py::test_a_job_still_running_there_past_the_threshold_clears_the_suspects_started_before_it",
        ),
        "a job still running past blackhole.seconds clears the suspects started before it",
    ),
    # ---- exit 67 and checkpoints -------------------------------------------------------------------------------
    Mutation(
        "deferred-held-for-fresh-jobs",
        "cigri/store/jobs.py",
        "            if deferred and self._fresh_left(campaign_id, avoiding):\n                break\n",
        "",
        (f"{G}requeue.py::test_an_exit_67_job_waits_while_a_fresh_one_waits_for_another_cluster",),
        "exit-67 jobs wait while fresh jobs of their campaign wait for another cluster",
    ),
    Mutation(
        "deferred-file-campaigns",
        "cigri/store/picking.py",
        "AND j.checkpoint_cluster IS NULL AND j.deferred = ? ORDER BY j.id, f.key",
        "AND j.checkpoint_cluster IS NULL AND j.deferred >= ? ORDER BY j.id, f.key",
        (f"{G}requeue.py::test_in_a_campaign_with_input_files_an_exit_67_job_goes_after_the_fresh_ones",),
        "the job pickers of campaigns with input files leave exit-67 jobs for last too",
    ),
    Mutation(
        "checkpoint-signal-walltime-only",
        "cigri/cycle/updator.py",
        'return kind == "signal" and status.state == RemoteState.KILLED and status.cause == KillCause.WALLTIME',
        'return kind == "signal" and status.state == RemoteState.KILLED',
        (f"{G}requeue.py::test_only_a_walltime_kill_of_a_signal_checkpointing_job_is_a_checkpoint",),
        "a signal-checkpointing job checkpointed only when killed at its walltime (its signal came first)",
    ),
    # ---- admission and secrets ---------------------------------------------------------------------------------
    Mutation(
        "secret-credential",
        "cigri/secrets.py",
        '"credential", ',
        "",
        (f"{G}admission.py::test_a_credential_is_a_secret",),
        "a key naming a credential holds a secret",
    ),
    Mutation(
        "admission-boundary",
        "cigri/campaigns.py",
        "if limit is not None and count > limit:",
        "if limit is not None and count >= limit:",
        (f"{G}admission.py::test_a_campaign_that_brings_the_user_exactly_to_the_limit_is_admitted",),
        "an admission limit is the most allowed, not the first refused",
    ),
    Mutation(
        "admission-unfinished-only",
        "cigri/store/jobs.py",
        "\"AND n.state IN ('to_launch', 'launching', 'submitted', 'running')\",",
        "\"AND n.state IN ('to_launch', 'launching', 'submitted', 'running', 'terminated')\",",
        (f"{G}admission.py::test_jobs_per_user_counts_the_jobs_not_finished",),
        "admission.jobs_per_user counts the user's jobs not finished",
    ),
    # ---- files -------------------------------------------------------------------------------------------------
    Mutation(
        "output-checksum",
        "cigri/cycle/files.py",
        "            if checksum != sha256_of(target):\n",
        "            if False:\n",
        (f"{G}files.py::test_an_output_damaged_in_transfer_is_an_event_and_is_not_kept",),
        "an output's copy is compared with the checksum read at its source",
    ),
    Mutation(
        "local-copy-checksum",
        "cigri/adapters/files.py",
        "checksum = sha256_of(Path(partial))",
        "checksum = expected.sha256",
        (f"{G}files.py::test_a_local_copy_reports_the_checksum_of_what_arrived",),
        "a local copy reports the checksum of the copy, not the one expected",
    ),
    Mutation(
        "check-replica-unknown-cluster",
        "cigri/store/integrity.py",
        "\"WHEN r.state IN ('launching', 'submitted', 'running', 'kill') \"\n"
        "            \"AND r.cluster NOT IN (SELECT name FROM clusters) THEN 'on unknown cluster ' || r.cluster \"\n",
        "",
        (f"{G}files.py::test_grid_admin_check_names_a_live_replica_on_an_unknown_cluster",),
        "grid admin check names a live replica on a cluster the state does not know",
    ),
    # ---- the parsers (tests/test_fuzz.py: the recorded outputs read right) ------------------------------------
    Mutation(
        "squeue-reads-nothing",
        "cigri/adapters/slurm.py",
        'if len(row) == 9 and row[8].strip().startswith("cigri.")]',
        'if len(row) == 9 and row[8].strip().startswith("cigri.") and False]',
        (f"{FUZZ}test_squeue_gives_states_or_an_adapter_error",),
        "squeue's lines are read (a parser that reads none answers UNKNOWN for all, a valid result)",
    ),
    Mutation(
        "slurm-states-raise",
        "cigri/adapters/slurm.py",
        "        out = {rid: RemoteStatus(rid, RemoteState.UNKNOWN) for rid in remote_ids}\n"
        "        for task_id, _array,",
        '        raise AdapterError(f"{self.name}: no states")\n'
        "        out = {rid: RemoteStatus(rid, RemoteState.UNKNOWN) for rid in remote_ids}\n"
        "        for task_id, _array,",
        (f"{FUZZ}test_squeue_gives_states_or_an_adapter_error", f"{FUZZ}test_sacct_gives_states_or_an_adapter_error"),
        "slurm-ssh's states answer (an adapter error for every call is a valid result)",
    ),
    Mutation(
        "sinfo-capacity-raise",
        "cigri/adapters/slurm.py",
        "        total = used = down = 0\n        for line in result.stdout.split():",
        '        raise AdapterError(f"{self.name}: no capacity")\n'
        "        total = used = down = 0\n        for line in result.stdout.split():",
        (f"{FUZZ}test_sinfo_gives_a_capacity_or_an_adapter_error",),
        "sinfo's counts are read",
    ),
    Mutation(
        "sbatch-ids-none",
        "cigri/adapters/slurm.py",
        "        if array_id is None or tasks is None or tasks > MAX_ARRAY_SIZE:\n            return None\n",
        "        return None\n",
        (f"{FUZZ}test_sbatch_and_scontrol_answers_give_ids_or_an_adapter_error",),
        "the batch's recorded ids are read back (find_batch)",
    ),
    Mutation(
        "slurm-rest-states-unknown",
        "cigri/adapters/slurm_rest.py",
        "            if task.remote_id in out:\n                remote, code, why = translate(",
        "            if task.remote_id in out and False:\n                remote, code, why = translate(",
        (
            f"{FUZZ}test_slurmrestd_jobs_give_states_or_an_adapter_error",
            f"{FUZZ}test_a_damaged_slurm_rest_memory_is_read_as_none",
        ),
        "slurmrestd's job records are read",
    ),
    Mutation(
        "slurmrestd-nodes-unread",
        "cigri/adapters/slurm_rest.py",
        "        total = used = down = 0\n        for node in self._nodes():",
        "        total = used = down = 0\n        for node in self._nodes()[:0]:",
        (f"{FUZZ}test_slurmrestd_nodes_give_a_capacity_or_an_adapter_error",),
        "slurmrestd's nodes are read (none read: a capacity of 0, a valid result)",
    ),
    Mutation(
        "oarsub-ids-unread",
        "cigri/adapters/oar_ssh.py",
        "        printed = _JOB_ID.findall(answer)\n        if not printed:",
        "        printed = _JOB_ID.findall(answer)[:0]\n        if not printed:",
        (f"{FUZZ}test_oarnodes_and_oarsub_answers_give_a_capacity_or_an_adapter_error",),
        "oarsub's job ids are read",
    ),
    Mutation(
        "oar-states-unknown",
        "cigri/adapters/oar.py",
        "        if job is None:\n            out[rid] = RemoteStatus(rid, RemoteState.UNKNOWN",
        "        if job is None or True:\n            out[rid] = RemoteStatus(rid, RemoteState.UNKNOWN",
        (
            f"{FUZZ}test_oarstat_gives_states_or_an_adapter_error",
            f"{FUZZ}test_oar_api_jobs_give_states_or_an_adapter_error",
        ),
        "OAR's job records are read (oarstat and the REST API)",
    ),
    Mutation(
        "pack-lines-ignored",
        "cigri/adapters/packing.py",
        "    out: dict[int, tuple] = {}\n    for line in text.splitlines():",
        "    out: dict[int, tuple] = {}\n    for line in text.splitlines()[:0]:",
        (f"{FUZZ}test_pack_status_lines_give_states",),
        "a pack's status lines are read (none read: every job of an ended pack back to the bag, a valid result)",
    ),
]


@dataclass
class Outcome:
    mutation: Mutation
    verdict: str  # caught, survived, rotted (old text not found once), error
    detail: str = ""
    seconds: float = 0.0


def python() -> str:
    return str(VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable))


def checkout_files() -> list[str]:
    """The files git tracks, and the new ones it does not ignore (read-only git)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return sorted({name for name in listed.split("\0") if name and (ROOT / name).is_file()})


def copy_checkout(target: Path, files: Sequence[str]) -> None:
    for name in files:
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination)


def environment(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    return env


def imported_cigri(copy: Path) -> str:
    """Where the copy's python imports cigri from."""
    result = subprocess.run(
        [python(), "-c", "import cigri; print(cigri.__file__)"],
        cwd=copy,
        env=environment(copy),
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def pytest(copy: Path, tests: Sequence[str]) -> subprocess.CompletedProcess:
    """The tests, in one process (no xdist, no random order, no cache), their tmp_path folders in the copy."""
    argv = [python(), "-m", "pytest", "-q", "-rfE", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider"]
    argv += [f"--basetemp={copy / '.pytest-tmp'}", *tests]
    return subprocess.run(argv, cwd=copy, env=environment(copy), capture_output=True, text=True, timeout=RUN_TIMEOUT)


def failed(result: subprocess.CompletedProcess, tests: Sequence[str]) -> list[str]:
    """Those of ``tests`` that failed (any of its parametrizations), from pytest's short summary. The exit
    status alone would not do: a run fails too when it finds files left in /tmp (by anyone)."""
    ids = {match.group(2) for match in SUMMARY.finditer(result.stdout)}
    return [test for test in tests if any(i == test or i.startswith(f"{test}[") for i in ids)]


def tail(text: str, lines: int = 15) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def mutate(copy: Path, mutation: Mutation) -> str | None:
    """Apply the mutation in the copy; the reason it cannot be, or None."""
    path = copy / mutation.file
    if not path.is_file():
        return f"{mutation.file}: no such file"
    text = path.read_text()
    found = text.count(mutation.old)
    if found != 1:
        return f"{mutation.file}: its old text is found {found} times, not once: the list needs updating"
    path.write_text(text.replace(mutation.old, mutation.new))
    return None


def run_one(mutation: Mutation, files: Sequence[str]) -> Outcome:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
        copy = Path(folder)
        copy_checkout(copy, files)
        problem = mutate(copy, mutation)
        if problem is not None:
            return Outcome(mutation, "rotted", problem)
        try:
            result = pytest(copy, mutation.tests)
        except subprocess.TimeoutExpired:
            return Outcome(mutation, "error", f"its tests ran past {RUN_TIMEOUT} s", time.monotonic() - started)
    seconds = time.monotonic() - started
    if result.returncode not in (0, 1):
        return Outcome(mutation, "error", f"pytest exited with {result.returncode}:\n{tail(result.stdout)}", seconds)
    caught = failed(result, mutation.tests)
    missed = [test for test in mutation.tests if test not in caught]
    if missed:
        return Outcome(mutation, "survived", "\n".join(f"    passed: {test}" for test in missed), seconds)
    return Outcome(mutation, "caught", "", seconds)


def baseline(mutations: Sequence[Mutation], files: Sequence[str]) -> str | None:
    """Run every named test on the unchanged copy; what went wrong, or None."""
    tests = list(dict.fromkeys(test for m in mutations for test in m.tests))
    with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
        copy = Path(folder)
        copy_checkout(copy, files)
        where = imported_cigri(copy)
        print(f"cigri imported from {where}")
        if not where.startswith(str(copy)):
            return f"the copy imports cigri from {where}, not from the copy"
        result = pytest(copy, tests)
    if result.returncode not in (0, 1) or failed(result, tests):
        problem = f"the named tests do not pass on the unchanged code (pytest exit {result.returncode})"
        return f"{problem}:\n{tail(result.stdout)}"
    print(f"unchanged code: the {len(tests)} named tests pass")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="run this mutation only (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and their tests, run nothing")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run of the tests on the unchanged code")
    args = parser.parse_args(argv)
    names = [m.name for m in MUTATIONS]
    assert len(set(names)) == len(names), "two mutations share a name"
    chosen = MUTATIONS
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"no mutation named {', '.join(unknown)} (see --list)")
        chosen = [m for m in MUTATIONS if m.name in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.file}: {m.what}")
            for test in m.tests:
                print(f"    {test}")
        return 0
    files = checkout_files()
    if not args.no_baseline:
        problem = baseline(chosen, files)
        if problem is not None:
            print(f"error: {problem}")
            return 1
    outcomes = []
    for mutation in chosen:
        outcome = run_one(mutation, files)
        outcomes.append(outcome)
        print(
            f"{outcome.verdict:>8}  {mutation.name} ({outcome.seconds:.0f} s)"
            + (f"\n{outcome.detail}" if outcome.detail else "")
        )
        sys.stdout.flush()
    counts = {
        verdict: sum(1 for o in outcomes if o.verdict == verdict)
        for verdict in ("caught", "survived", "rotted", "error")
    }
    print(", ".join(f"{n} {verdict}" for verdict, n in counts.items()) + f" of {len(outcomes)} mutations")
    return 0 if counts["caught"] == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
