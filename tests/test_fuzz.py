"""Fuzzing every parser of outside text: the JDL (YAML and JSON text, and mappings of its real keys) and
what each resource manager answers (squeue, sacct, sinfo, sbatch and scontrol; slurmrestd's JSON; oarstat,
oarnodes and oarsub; OAR's REST API in both flavours; the packs' status lines).

The property: a parser gives a valid result (every state a :class:`RemoteState`, UNKNOWN for what it does
not understand; counts that are whole and not negative) or raises one of cigri's own errors with a
one-line message; never any other exception. Inputs are random text and, finding far more, the recorded
outputs of tests/fixtures and tests/oar/fixtures mutated: fields dropped, duplicated, retyped or replaced
by odd values (huge numbers, other scripts' digits, NUL, NaN), lines cut, separators swapped. On the recorded
outputs as they were, each parser must also read what they say (states, exit codes, ids): a parser that
raises or answers UNKNOWN for everything has the property (scripts/mutations.py shows these tests catch it).

Examples per test: ``CIGRI_FUZZ_EXAMPLES`` (default :data:`CI_EXAMPLES`, what CI runs);
``CIGRI_FUZZ_EXAMPLES=10000 pytest tests/test_fuzz.py`` is the full run (see the README's Fuzzing part).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cigri import jdl
from cigri.adapters import AdapterContext, packing
from cigri.adapters.oar_rest import OarRest
from cigri.adapters.oar_ssh import OarSsh
from cigri.adapters.reading import LAST_EPOCH
from cigri.adapters.slurm import MAX_ARRAY_SIZE, SlurmSsh
from cigri.adapters.slurm_rest import SlurmRest, task_indices
from cigri.adapters.transport import LocalRunner, Result
from cigri.cli import grid
from cigri.errors import CigriError, JdlError
from cigri.model import Capacity, Cluster, JobSpec, KillCause, RemoteState, RemoteStatus

CI_EXAMPLES = 750
EXAMPLES = int(os.environ.get("CIGRI_FUZZ_EXAMPLES") or CI_EXAMPLES)
fuzz = settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

ROOT = Path(__file__).parent.parent
SLURM = ROOT / "tests" / "fixtures" / "slurm"
OAR = ROOT / "tests" / "oar" / "fixtures"
USER = "cigritest"
HOME = "/home/cigritest"


# ---- the property ------------------------------------------------------------------------------------------


def clean(call: Callable[[], object]) -> object | None:
    """``call()``'s result, or None when it raised one of cigri's errors, whose message must be one line."""
    try:
        return call()
    except CigriError as exc:
        message = str(exc)
        assert message.strip(), f"{type(exc).__name__} without a message"
        assert "\n" not in message and "\r" not in message, f"{type(exc).__name__} of several lines: {message!r}"
        return None


def check_states(found: object, asked: Sequence[str]) -> None:
    if found is None:
        return
    assert isinstance(found, dict) and set(found) == set(asked)
    for remote_id, status in found.items():
        assert isinstance(status, RemoteStatus) and status.remote_id == remote_id
        assert isinstance(status.state, RemoteState)
        assert status.exit_code is None or (type(status.exit_code) is int and 0 <= status.exit_code <= 255)
        for moment in (status.started_at, status.ended_at):  # a time a clock reaches, and SQLite holds
            assert moment is None or (type(moment) in (int, float) and 0 < moment <= LAST_EPOCH), moment
        assert isinstance(status.reason, str)


def check_capacity(found: object) -> None:
    if found is None:
        return
    assert isinstance(found, Capacity)
    for count in (found.total, found.used, found.grid_used, found.queued):
        assert type(count) is int and count >= 0, found


def check_ids(found: object, count: int | None = None) -> None:
    """A list of remote ids (or None, for find_batch), ``count`` of them when given."""
    if found is None:
        return
    assert isinstance(found, list) and all(isinstance(i, str) and i and i.isascii() for i in found), found
    assert len(found) <= MAX_ARRAY_SIZE  # no more than a Slurm array holds (a huge count once ate all memory)
    if count is not None:
        assert len(found) == count


def check_cores(found: object) -> None:
    assert found is None or (type(found) is int and found >= 1), found


# ---- what the recorded outputs say -------------------------------------------------------------------------
# The property holds of a parser that raises, or answers UNKNOWN, whatever it is given. So each fuzz test also
# runs on its recorded outputs as they were (an @example; Hypothesis draws them too, unmutated), and there the
# parser must read what the fixtures' READMEs say: each job's state, exit code and why it was killed, the ids.

PENDING, RUNNING, EXITED, KILLED, UNKNOWN = (
    RemoteState.PENDING,
    RemoteState.RUNNING,
    RemoteState.EXITED,
    RemoteState.KILLED,
    RemoteState.UNKNOWN,
)
Known = dict[str, tuple[RemoteState, int | None, KillCause | None]]  # remote id -> (state, exit code, cause)


def check_known(found: object, known: Known) -> None:
    """``found`` (a parser's states) gives each job of ``known`` that it holds its known state."""
    assert found is not None, "the recorded output was refused"
    assert isinstance(found, dict)
    got = {rid: (found[rid].state, found[rid].exit_code, found[rid].cause) for rid in known if rid in found}
    assert got == {rid: known[rid] for rid in got}


# ---- strategies --------------------------------------------------------------------------------------------

# values that break parsers: other scripts' digits (str.isdigit() but not int()), too many digits for int(),
# placeholders, NUL, signs, exponents
ODD = st.sampled_from(
    [
        "",
        " ",
        "²",
        "٣",
        "１２",
        "-1",
        "+5",
        "1e999",
        "NaN",
        "inf",
        "0x1f",
        "1_000",
        "9" * 5000,
        "99999999999999999999999",
        "\x00",
        "\ud800",
        "?x#y",
        "\n",
        "a\nb",
        "N/A",
        "None",
        "(null)",
        "Unknown",
        "NONE",
        "0:0",
        "1:",
        ":9",
        "2:15",
        "CANCELLED by 0",
        "RUNNING+",
        "cigri.x",
        "1-3",
        "1,3,5-9:2",
        "2-7%4",
        "0-99999999999",
        "1-4:0",
        "3-1",
        "2026-11-22T12:48:35",
        "9999-12-31T23:59:59",
        "0001-01-01T00:00:00",
        "2026-13-45",
        "Terminated",
        "Error",
        "Running",
        "Waiting",
        "BESTEFFORT_KILL",
        "RESUBMIT_JOB_AUTOMATICALLY",
        "WORKING_DIRECTORY",
    ]
)
WORD = st.one_of(ODD, st.text(max_size=12), st.integers().map(str), st.integers(-(2**70), 2**70).map(str))
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.sampled_from([0, 1, -1, 256, 2**31, 2**63, 10**30, 1e300, -1e300]),
    WORD,
)
JUNK = st.one_of(SCALAR, SCALAR, st.lists(SCALAR, max_size=3), st.dictionaries(WORD, SCALAR, max_size=2))


def _nodes(value: object, path: tuple = ()) -> list[tuple]:
    """The path of every part of a JSON document (the document itself first)."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _nodes(item, (*path, index))
    return out


@st.composite
def mutated(draw, document: object) -> object:
    """``document`` (JSON) after a few mutations, each at a part drawn at random: replaced by another type
    or an odd value, dropped, repeated, or given a stray key or item."""
    value = json.loads(json.dumps(document))  # a copy
    for _ in range(draw(st.integers(0, 6))):
        path = draw(st.sampled_from(_nodes(value)))
        action = draw(st.sampled_from(("retype", "odd", "drop", "twice", "add")))
        if not path:
            value = draw(JUNK) if action in ("retype", "odd") else value
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        key, node = path[-1], parent[path[-1]]
        if action == "retype":
            parent[key] = draw(JUNK)
        elif action == "odd":
            parent[key] = draw(ODD)
        elif action == "drop":
            del parent[key]
        elif action == "twice":
            if isinstance(parent, list):
                parent.insert(key, json.loads(json.dumps(node)))
            else:
                parent[key] = [node, node]
        elif isinstance(node, dict):
            node[draw(WORD)] = draw(JUNK)
        elif isinstance(node, list):
            node.append(draw(JUNK))
    return value


def json_text(document: object) -> st.SearchStrategy[str]:
    """The JSON text of a mutated ``document``, sometimes cut short, sometimes plain random text."""

    def dumped(value: object) -> str:
        return json.dumps(value, allow_nan=True, default=str)

    whole = mutated(document).map(dumped)
    cut = st.tuples(whole, st.integers(0, 2000)).map(lambda t: t[0][: t[1]])
    return st.one_of(whole, whole, whole, cut, st.text(max_size=50), JUNK.map(dumped))


@st.composite
def mutated_lines(draw, text: str, separator: str) -> str:
    """A recorded command output after a few mutations, each on a line drawn at random: a field dropped,
    repeated or replaced by an odd value, the line cut, dropped, repeated or replaced, its separators
    swapped; then the line ends changed."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            lines.append(draw(st.text(max_size=40)))
            continue
        at = draw(st.integers(0, len(lines) - 1))
        line, fields = lines[at], lines[at].split(separator)
        action = draw(st.sampled_from(("field", "field", "field", "cut", "drop", "twice", "junk", "swap")))
        if action in ("field", "swap"):
            where = draw(st.integers(0, len(fields) - 1))
            change = draw(st.sampled_from(("drop", "twice", "odd", "odd")))
            if change == "drop":
                del fields[where]
            elif change == "twice":
                fields.insert(where, fields[where])
            else:
                fields[where] = draw(WORD)
            joiner = draw(st.sampled_from((",", " ", "||", "\t", ":"))) if action == "swap" else separator
            lines[at] = joiner.join(fields)
        elif action == "cut":
            lines[at] = line[: draw(st.integers(0, len(line)))]
        elif action == "drop":
            del lines[at]
        elif action == "twice":
            lines.insert(at, line)
        else:
            lines[at] = draw(st.text(max_size=40))
    end = draw(st.sampled_from(("\n", "\n", "\r\n", "\n\n", "")))
    return end.join(lines) + draw(st.sampled_from(("\n", "")))


def command_output(text: str, separator: str) -> st.SearchStrategy[str]:
    return st.one_of(mutated_lines(text, separator), mutated_lines(text, separator), st.text(max_size=80))


# ---- JDL ---------------------------------------------------------------------------------------------------

EXAMPLE_JDLS = [p.read_text() for p in sorted((ROOT / "jdl-examples").rglob("*")) if p.suffix in (".yaml", ".json")]
BASE_JDL = {"name": "n", "exec_file": "/bin/true", "clusters": {"local": {}}, "params": ["a 1", "b 2"]}
GOOD_VALUES = {
    "name": st.sampled_from(["sweep", " x ", "é"]),
    "exec_file": st.sampled_from(["/bin/true", "{HOME}/run", "{JDL_DIR}/x"]),
    "exec_directory": st.sampled_from(["{HOME}", "/tmp/x"]),
    "resources": st.sampled_from(
        [
            "/resource_id=1",
            "core=2",
            "/nodes=2/core=4",
            "nodes=0",
            "gpu=1",
            "/core=",
            "nodes=3+licence=2",
            "{a='b'}/core=1",
        ]
    ),
    "walltime": st.sampled_from(["01:00:00", "00:5:00", "300", 300, "1:2", "24:00:00:00"]),
    "properties": st.sampled_from(["", "cluster='a'", "x='1' AND y='2'", "bad"]),
    "type": st.sampled_from(["best-effort", "normal", "besteffort", "Best_Effort"]),
    "test_mode": st.sampled_from([True, "false", "yes", 0, 2]),
    "max_jobs": st.sampled_from([1, "3", 0, "-1"]),
    "prologue": st.sampled_from([["set -e"], "echo", []]),
    "epilogue": st.sampled_from([["echo"], "x"]),
    "prologue_walltime": st.sampled_from(["00:01:00", 60]),
    "epilogue_walltime": st.sampled_from(["00:01:00", 60]),
    "environment": st.sampled_from([{"A": "1"}, {"CIGRI_X": "y"}, {"1A": "x"}, {"A": 1}, {"A": "a\nb"}]),
    "temporal_grouping": st.sampled_from([True, "no", "300", "00:10:00", 0, "0"]),
    "dimensional_grouping": st.sampled_from([False, "true"]),
    "nb_jobs": st.sampled_from([3, "5", 0, 10**9]),
    "params": st.lists(st.sampled_from(["a 1", "b 'c d'", "a 1", '"x', "", "q\\ r", "z"]), max_size=4),
    "param_file": st.sampled_from(["p.txt", "{HOME}/none", "/dev/null"]),
    "priority": st.sampled_from([0, "-3", 5]),
    "class": st.sampled_from(["physics", ""]),
    "finalize": st.sampled_from([True, "false"]),
    "max_attempts": st.sampled_from([3, "1", 0, "-2", 2.5, "²"]),
    "retry_resources": st.sampled_from(
        [{"walltime": 2}, {"walltime": 2, "max_walltime": "08:00:00"}, {"walltime": 0.5}, {"memory": 2}, {"x": 1}, 2]
    ),
    "checkpointing_type": st.sampled_from(["signal", "exit-code", "Signal", "blcr", "", "None"]),
    "jobs_type": st.sampled_from(["normal", "desktop_computing", "Normal"]),
    "cluster_job_type": st.sampled_from(["", "deploy", "night,idempotent", "besteffort", "a b"]),
    "checkpointing_signal": st.sampled_from(["USR2", "SIGUSR1", "KILL", 12, "usr1"]),
    "checkpointing_grace": st.sampled_from([300, "60", 0, -1, "00:05:00", 10**12]),
    "checkpointing_exit_code": st.sampled_from([68, "99", 0, 66, 256, -1]),
}
KEYS = sorted({*jdl.GLOBAL_ONLY, *jdl.CLUSTER_DEFAULTS, "output_file", "exec_fil", "Name"})


def jdl_value(key: str) -> st.SearchStrategy:
    good = GOOD_VALUES.get(key.lower())
    return st.one_of(good, good, JUNK) if good is not None else JUNK


@st.composite
def jdl_mappings(draw) -> dict:
    """JDL mappings of the real keys, each given a right value, a wrong one, or none."""
    data = dict(BASE_JDL)
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=6)):
        data[key] = draw(jdl_value(key))
    if draw(st.booleans()):
        data.pop(draw(st.sampled_from(sorted(data))))
    clusters = {}
    for name in draw(st.lists(WORD, min_size=0, max_size=2)) or ["local"]:
        settings_keys = draw(st.lists(st.sampled_from(KEYS), max_size=3))
        clusters[name] = draw(st.one_of(st.just({k: draw(jdl_value(k)) for k in settings_keys}), JUNK))
    data["clusters"] = draw(st.one_of(st.just(clusters), st.just(clusters), JUNK))
    return data


@st.composite
def edited_text(draw, texts: list[str]) -> str:
    """One of ``texts`` with a few spans deleted, repeated or replaced by odd characters."""
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 20)))
        edit = draw(st.sampled_from(("delete", "repeat", "insert")))
        if edit == "delete":
            text = text[:start] + text[end:]
        elif edit == "repeat":
            text = text[:end] + text[start:end] + text[end:]
        else:
            text = (
                text[:start] + draw(st.one_of(WORD, st.sampled_from(list(":{}[],'\"#&*!|>-\t\x00\ufeff")))) + text[end:]
            )
    return text


def consume(parsed: jdl.Jdl) -> None:
    """What gridsub does with a parsed JDL: its record is JSON, its jobs are named (small campaigns), and
    nothing a job's command is made of holds a NUL (subprocess refuses it)."""
    json.dumps(parsed.as_record())
    for settings_ in parsed.clusters.values():
        assert "\\u0000" not in json.dumps(settings_)  # how JSON writes a NUL
    if parsed.nb_jobs is None or parsed.nb_jobs <= 1000:
        for name, line in jdl.jobs_of(parsed):
            assert isinstance(name, str) and name and isinstance(line, str) and "\0" not in line


@fuzz
@given(text=st.one_of(edited_text(EXAMPLE_JDLS), st.text(max_size=200), jdl_mappings().map(json.dumps)))
def test_jdl_text_gives_a_jdl_or_a_jdl_error(tmp_path_factory, text):
    folder = tmp_path_factory.getbasetemp() / "jdl"
    folder.mkdir(exist_ok=True)
    (folder / "sweep-params.txt").write_text("a 1\nb 2\n")
    parsed = clean(lambda: jdl.parse(jdl.load_text(text), base_dir=folder))
    if parsed is not None:
        clean(lambda: consume(parsed))


@fuzz
@given(data=jdl_mappings())
def test_jdl_mappings_give_a_jdl_or_a_jdl_error(data):
    parsed = clean(lambda: jdl.parse(data, base_dir=Path("/nonexistent")))
    if parsed is not None and parsed.param_file is None:
        clean(lambda: consume(parsed))


@fuzz
@given(content=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
def test_param_files_give_jobs_or_a_jdl_error(tmp_path_factory, content):
    path = tmp_path_factory.getbasetemp() / "params.txt"
    path.write_bytes(content)
    data = {key: value for key, value in BASE_JDL.items() if key != "params"}
    parsed = jdl.parse({**data, "param_file": str(path)})
    clean(lambda: consume(parsed))


# ---- slurm-ssh: squeue, sacct, sinfo, sbatch, scontrol -----------------------------------------------------


class Clock:
    """A clock that stands still: nothing here waits."""

    def now(self) -> float:
        return 1_800_000_000.0

    def sleep(self, seconds: float) -> None:
        pass


class Answers:
    """A CommandRunner answering each command (by its name, or ``sh`` for the scripts) with what a test
    drew; the home directory as a real cluster tells it."""

    where = "fuzz"

    def __init__(self, answers: dict[str, Result | str]):
        self.answers = answers

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = None) -> Result:
        if argv[0] == "sh" and argv[-1] == 'printf %s "$HOME"':
            return Result(tuple(argv), 0, HOME, "")
        answer = self.answers.get(argv[0], "")
        return answer if isinstance(answer, Result) else Result(tuple(argv), 0, answer, "")

    def close(self) -> None:
        pass


def command_result(output: st.SearchStrategy[str]) -> st.SearchStrategy[Result]:
    """What a command answers: mostly its output with exit 0, else an exit status and some stderr."""
    failed = st.builds(Result, st.just(("cmd",)), st.integers(1, 255), output, st.one_of(ODD, st.text(max_size=60)))
    return st.one_of(st.builds(Result, st.just(("cmd",)), st.just(0), output, st.just("")), failed)


def spec(job_id: int = 1) -> JobSpec:
    return JobSpec(job_id, 1, f"j{job_id}", ("/bin/true", "a"), "{HOME}", 60)


SQUEUE_RUNNING = (SLURM / "squeue.running.txt").read_text()
SQUEUE_ENDED = (SLURM / "squeue.ended.txt").read_text()
SQUEUE = SQUEUE_RUNNING + SQUEUE_ENDED
SACCT_ACCOUNTING = (SLURM / "sacct-accounting.ended.txt").read_text()
SACCT = (SLURM / "sacct.ended.txt").read_text() + SACCT_ACCOUNTING
SINFO = "8/0/0/8\n2/6/0/8\n"
CORES = "4\n8+\n"  # sinfo -o %c: the cores of each kind of node ("8+": 8 or more)
TASKS = sorted({line.split("|")[0] for line in SQUEUE.splitlines()} | {"3448", "3436", "999_1", "x", ""})

# the recorded jobs (tests/fixtures/slurm/README.md): ok 3435 (2 tasks), fail 3436 (exit 3), signal 3437 (kill -9),
# wait 3438 and held 3439 (pending), run 3440 (task 1 cancelled), suspend 3441, requeue 3442, filler 3450 (8
# best-effort tasks), preemptor 3457, timeout 3434; at the moment "ended" every live one was cancelled
SQUEUE_STATES: dict[str, Known] = {
    SQUEUE_RUNNING: {
        "3434_1": (RUNNING, None, None),
        "3435_1": (EXITED, 0, None),
        "3435_2": (EXITED, 0, None),
        "3436_1": (EXITED, 3, None),
        "3437_1": (EXITED, 137, None),
        "3438_1": (PENDING, None, None),
        "3439_1": (PENDING, None, None),
        "3440_1": (KILLED, None, KillCause.ADMIN),
        "3440_2": (RUNNING, None, None),
        "3441_1": (RUNNING, None, None),
        "3442_1": (PENDING, None, None),
        "3450_1": (PENDING, None, None),
        "3450_2": (RUNNING, None, None),
        "3457_1": (RUNNING, None, None),
        "999_1": (UNKNOWN, None, None),
    },
    SQUEUE_ENDED: {
        "3434_1": (KILLED, None, KillCause.WALLTIME),
        "3435_1": (EXITED, 0, None),
        "3436_1": (EXITED, 3, None),
        "3437_1": (EXITED, 137, None),
        "3438_1": (KILLED, None, KillCause.ADMIN),
        "3440_2": (KILLED, None, KillCause.ADMIN),
        "3450_2": (KILLED, None, KillCause.ADMIN),
        "999_1": (UNKNOWN, None, None),
    },
}
# sinfo's 16 CPUs, 10 allocated; squeue's running and pending tasks of cigri
SQUEUE_CAPACITY = {SQUEUE_RUNNING: Capacity(16, 10, 8, 7), SQUEUE_ENDED: Capacity(16, 10, 0, 0)}
SACCT_STATES: dict[str, Known] = {  # what slurmdbd says of the arrays once slurmctld forgot them
    SACCT_ACCOUNTING: {
        "3434": (KILLED, None, KillCause.WALLTIME),
        "3435": (EXITED, 0, None),
        "3436": (EXITED, 3, None),
        "3437": (EXITED, 137, None),
        "3448": (EXITED, 0, None),
        "3449": (KILLED, None, KillCause.ADMIN),
        "999": (UNKNOWN, None, None),
    }
}


def recorded(text: str) -> Result:
    """A command's recorded output, as it answered it."""
    return Result(("cmd",), 0, text, "")


def slurm_ssh(answers: dict[str, Result | str]) -> SlurmSsh:
    cluster = Cluster("fz", "slurm-ssh", {"accounting": "sacct"})
    return SlurmSsh(cluster, AdapterContext(Path("/nonexistent"), Clock()), runner=Answers(answers))


@fuzz
@given(squeue=command_result(command_output(SQUEUE, "|")), ids=st.lists(st.sampled_from(TASKS), max_size=6))
@example(squeue=recorded(SQUEUE_RUNNING), ids=sorted(SQUEUE_STATES[SQUEUE_RUNNING]))
@example(squeue=recorded(SQUEUE_ENDED), ids=sorted(SQUEUE_STATES[SQUEUE_ENDED]))
def test_squeue_gives_states_or_an_adapter_error(squeue, ids):
    states = clean(lambda: slurm_ssh({"squeue": squeue}).states(ids))
    check_states(states, ids)
    capacity = clean(lambda: slurm_ssh({"squeue": squeue, "sinfo": SINFO}).capacity())
    check_capacity(capacity)
    if squeue.ok and squeue.stdout in SQUEUE_STATES:
        check_known(states, SQUEUE_STATES[squeue.stdout])
        assert capacity == SQUEUE_CAPACITY[squeue.stdout]


@fuzz
@given(sacct=command_result(command_output(SACCT, "|")), ids=st.lists(st.sampled_from(TASKS), max_size=6))
@example(sacct=recorded(SACCT_ACCOUNTING), ids=sorted(SACCT_STATES[SACCT_ACCOUNTING]))
def test_sacct_gives_states_or_an_adapter_error(sacct, ids):
    states = clean(lambda: slurm_ssh({"squeue": "", "sacct": sacct}).states(ids))
    check_states(states, ids)
    if sacct.ok and sacct.stdout in SACCT_STATES:
        check_known(states, SACCT_STATES[sacct.stdout])


@fuzz
@given(sinfo=command_result(command_output(SINFO + CORES, "/")))
@example(sinfo=recorded(SINFO))
@example(sinfo=recorded(CORES))
def test_sinfo_gives_a_capacity_or_an_adapter_error(sinfo):
    capacity = clean(lambda: slurm_ssh({"squeue": SQUEUE_RUNNING, "sinfo": sinfo}).capacity())
    check_capacity(capacity)
    cores = clean(lambda: slurm_ssh({"sinfo": sinfo}).node_cores())
    check_cores(cores)
    if sinfo.ok and sinfo.stdout == SINFO:
        assert capacity == SQUEUE_CAPACITY[SQUEUE_RUNNING]
    if sinfo.ok and sinfo.stdout == CORES:
        assert cores == 4, "the smallest node's"


SLURM_ANSWERS = "3450\n3451;cluster\n3450 3\n"
SBATCH_ARRAY = {"3450\n": "3450", "3451;cluster\n": "3451"}  # sbatch --parsable: the array id (;its cluster)
RECORDED_IDS = {"3450\n3\n": ["3450_1", "3450_2", "3450_3"]}  # the ids file, then wc -l of the args file


@fuzz
@given(
    answer=command_result(command_output(SLURM_ANSWERS, ";")),
    scontrol=command_result(st.just("")),
    stderr=command_output("slurm_suspend error: Invalid job id specified\nAccess/permission denied\n", " "),
    count=st.integers(1, 3),
)
@example(answer=recorded("3451;cluster\n"), scontrol=recorded(""), stderr="", count=3)
@example(answer=recorded("3450\n3\n"), scontrol=recorded(""), stderr="", count=1)
def test_sbatch_and_scontrol_answers_give_ids_or_an_adapter_error(answer, scontrol, stderr, count):
    """sbatch's answer (submit), the recorded ids (find_batch), scontrol's complaints (hold, release)."""
    submitted = clean(lambda: slurm_ssh({"sh": answer}).submit("cigri.1", [spec(i) for i in range(count)]))
    check_ids(submitted, count)
    found = clean(lambda: slurm_ssh({"sh": answer}).find_batch("cigri.1"))
    check_ids(found)
    refused = Result(scontrol.argv, scontrol.returncode, "", stderr)
    clean(lambda: slurm_ssh({"scontrol": refused}).hold(["1_1", "1_2"]))
    if answer.ok and answer.stdout in SBATCH_ARRAY:
        assert submitted == [f"{SBATCH_ARRAY[answer.stdout]}_{i}" for i in range(1, count + 1)]
    if answer.ok and answer.stdout in RECORDED_IDS:
        assert found == RECORDED_IDS[answer.stdout]


# ---- slurm-rest: slurmrestd's JSON -------------------------------------------------------------------------

READ_KEYS = (
    "name",
    "user_name",
    "array_job_id",
    "array_task_id",
    "array_task_string",
    "job_state",
    "state_reason",
    "exit_code",
    "start_time",
    "end_time",
    "cpus",
    "comment",
    "job_id",
)


def rest_jobs() -> dict:
    """A few recorded job records (the fields cigri reads), and the same in v0.0.39's forms."""
    recorded = json.loads((SLURM / "rest-jobs.running.json").read_text())
    jobs = [{k: job[k] for k in READ_KEYS if k in job} for job in recorded["jobs"][:6]]
    newer = {
        **jobs[0],
        "job_state": ["RUNNING", "COMPLETING"],
        "exit_code": {"set": True, "infinite": False, "number": 256},
        "start_time": {"set": True, "number": 1795351590},
        "array_task_id": {"set": False, "number": 0},
        "array_task_string": "4-6,9",
    }
    return {"meta": recorded["meta"], "errors": [], "jobs": [*jobs, newer]}


REST_JOBS = rest_jobs()
REST_NODES = json.loads((SLURM / "rest-nodes.running.json").read_text())
REST_ERROR = json.loads((SLURM / "rest-500.down-jobs.json").read_text())
REST_SUBMIT = {"job_id": 3460, "step_id": "batch", "errors": [], "job_submit_user_msg": ""}
REST_IDS = sorted({f"{job['array_job_id']}_{job['array_task_id']}" for job in REST_JOBS["jobs"][:6]} | {"x_1", "9_"})


@st.composite
def rest_answers(draw, document: dict) -> tuple[int, bytes]:
    """(HTTP status, body) of a slurmrestd answer: mostly 200 and a mutated ``document``."""
    status = draw(st.sampled_from((200, 200, 200, 200, 400, 404, 500, 502)))
    body = draw(json_text(document if status < 400 else REST_ERROR))
    return status, body.encode("utf-8", "surrogatepass") if draw(st.booleans()) else body.encode("utf-8", "replace")


def slurm_rest(folder: Path, answers: dict[str, tuple[int, bytes]], memory: str | None = None) -> SlurmRest:
    """slurm-rest on a MockTransport answering by the path's last part (``job`` for job/<id>), with no memory
    (each example starts as a new cluster would) and the API version forced, or with ``memory`` as the text
    of its memory file and the version found by a ping."""
    path = folder / "clusters" / "fz" / "slurm-rest.json"
    path.unlink(missing_ok=True)
    if memory is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(memory, errors="surrogatepass")

    def serve(request: httpx.Request) -> httpx.Response:
        parts = request.url.path.split("/")
        leaf = "job" if parts[-2] == "job" and parts[-1] != "submit" else parts[-1]
        status, body = answers.get(leaf, (404, b"Not Found"))
        return httpx.Response(status, content=body)

    config = {"url": "https://rest.example:6820", "user": USER, "token_file": str(folder / "token"), "home": HOME}
    if memory is None:
        config["api"] = "v0.0.38"
    return SlurmRest(
        Cluster("fz", "slurm-rest", config), AdapterContext(folder, Clock()), transport=httpx.MockTransport(serve)
    )


@pytest.fixture(scope="module")
def rest_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("rest")
    (folder / "token").write_text("SLURM_JWT=fuzz.token\n")
    (folder / "token").chmod(0o600)
    return folder


# the first six recorded records (3434_1 timeout, 3435_1 ok, 3436_1 fail, 3437_1 signal, 3438 wait's pending
# tasks 1 and 3, 3439 held) and 3434's record in v0.0.39's forms, running tasks 4-6 and 9
REST_STATES: Known = {
    "3434_1": (RUNNING, None, None),
    "3434_4": (RUNNING, None, None),
    "3434_9": (RUNNING, None, None),
    "3434_7": (UNKNOWN, None, None),
    "3435_1": (EXITED, 0, None),
    "3436_1": (EXITED, 3, None),
    "3437_1": (EXITED, 137, None),
    "3438_1": (PENDING, None, None),
    "3438_2": (UNKNOWN, None, None),  # cancelled while pending: listed nowhere
    "3438_3": (PENDING, None, None),
    "3439_1": (PENDING, None, None),
    "x_1": (UNKNOWN, None, None),
}
REST_CAPACITY = Capacity(8, 8, 5, 3)  # the node's 8 CPUs all allocated; 5 of cigri's tasks run, 3 wait


def as_sent(document: object) -> tuple[int, bytes]:
    """A slurmrestd or OAR answer as recorded: 200 and the document."""
    return 200, json.dumps(document).encode()


@fuzz
@given(jobs=rest_answers(REST_JOBS), ids=st.lists(st.sampled_from(REST_IDS), max_size=5))
@example(jobs=as_sent(REST_JOBS), ids=sorted(REST_STATES))
def test_slurmrestd_jobs_give_states_or_an_adapter_error(rest_dir, jobs, ids):
    """GET job/<array id> (states, cancel), GET jobs (find_batch and capacity without a memory)."""
    answers = {"job": jobs, "jobs": jobs, "nodes": as_sent(REST_NODES)}
    states = clean(lambda: slurm_rest(rest_dir, answers).states(ids))
    check_states(states, ids)
    found = clean(lambda: slurm_rest(rest_dir, answers).find_batch("cigri.record.ok"))
    check_ids(found)
    capacity = clean(lambda: slurm_rest(rest_dir, answers).capacity())
    check_capacity(capacity)
    clean(lambda: slurm_rest(rest_dir, answers).cancel(ids))
    if jobs == as_sent(REST_JOBS):
        check_known(states, REST_STATES)
        assert found == ["3435_1", "3435_2"], "the comment says: a batch of 2 tasks"
        assert capacity == REST_CAPACITY


@fuzz
@given(nodes=rest_answers(REST_NODES))
@example(nodes=as_sent(REST_NODES))
def test_slurmrestd_nodes_give_a_capacity_or_an_adapter_error(rest_dir, nodes):
    answers = {"nodes": nodes, "jobs": as_sent(REST_JOBS)}
    capacity = clean(lambda: slurm_rest(rest_dir, answers).capacity())
    check_capacity(capacity)
    cores = clean(lambda: slurm_rest(rest_dir, answers).node_cores())
    check_cores(cores)
    if nodes == as_sent(REST_NODES):
        assert (capacity, cores) == (REST_CAPACITY, 8)


@fuzz
@given(answer=rest_answers(REST_SUBMIT), count=st.integers(1, 3))
@example(answer=as_sent(REST_SUBMIT), count=3)
def test_slurmrestd_submit_and_update_answers_give_ids_or_an_adapter_error(rest_dir, answer, count):
    submitted = clean(
        lambda: slurm_rest(rest_dir, {"submit": answer}).submit("cigri.1", [spec(i) for i in range(count)])
    )
    check_ids(submitted, count)
    clean(lambda: slurm_rest(rest_dir, {"job": answer}).hold(["3434_1", "3434_2"]))
    if answer == as_sent(REST_SUBMIT):
        assert submitted == [f"3460_{i}" for i in range(1, count + 1)]


MEMORY = {
    "batches": {"5": {"at": 1795351590.0, "key": "cigri.a", "tasks": 2, "live": True}},
    "api": {"url": "https://rest.example:6820", "version": "v0.0.38"},
}


@fuzz
@given(memory=json_text(MEMORY))
@example(memory='{"batches": {"5": {"at": "x", "key": "cigri.a", "tasks": 2}}}')  # float("x"): ValueError
@example(memory='{"batches": {"5": {"at": 1, "key": "cigri.a", "tasks": "x"}}}')  # int("x"): ValueError
@example(memory='{"batches": {"²": {"at": 1, "key": "cigri.a", "tasks": 2}}}')  # int("²"): ValueError
# find_batch listed every id up to "tasks": 10**17 of them took all of the machine's memory (OOM-killed)
@example(memory=json.dumps({"batches": {"5": {"at": 1, "key": "cigri.a", "tasks": MAX_ARRAY_SIZE + 1}}}))
@example(memory=json.dumps(MEMORY))
def test_a_damaged_slurm_rest_memory_is_read_as_none(rest_dir, memory):
    """The memory is cigri's own file, but a damaged one must cost the full listing, not a crash."""
    jobs = as_sent({"jobs": [rest_job(), rest_job(array_task_id=2, job_state="RUNNING")]})
    answers = {"job": jobs, "jobs": jobs, "ping": (200, b"{}"), "nodes": as_sent(REST_NODES)}
    answers["submit"] = as_sent(REST_SUBMIT)
    found = clean(lambda: slurm_rest(rest_dir, answers, memory).find_batch("cigri.a"))
    check_ids(found)
    states = clean(lambda: slurm_rest(rest_dir, answers, memory).states(["5_1", "5_2"]))
    check_states(states, ["5_1", "5_2"])
    check_capacity(clean(lambda: slurm_rest(rest_dir, answers, memory).capacity()))
    submitted = clean(lambda: slurm_rest(rest_dir, answers, memory).submit("cigri.b", [spec(1)]))
    check_ids(submitted, 1)
    if memory == json.dumps(MEMORY):  # as cigri wrote it: batch 5 of cigri.a has 2 tasks
        assert found == ["5_1", "5_2"]
        check_known(states, {"5_1": (EXITED, 0, None), "5_2": (RUNNING, None, None)})
        assert submitted == ["3460_1"]


# ---- oar-ssh: oarstat -J, oarnodes -J, oarsub ---------------------------------------------------------------


def oar_records() -> list[dict]:
    """OAR's job records as the fixtures hold them (REST items and oarstat records), a few events added."""
    details = json.loads((OAR / "oar25-jobs-details.json").read_text())["items"]
    records = [*details, json.loads((OAR / "oar25-job-5232.json").read_text())]
    records += json.loads((OAR / "oarstat-J.json").read_text()).values()
    records += json.loads((OAR / "oar3-jobs.json").read_text())["items"]
    error = {"id": 7, "state": "Error", "name": "cigri.1", "owner": USER, "exit_code": 256, "array_index": 2}
    error["events"] = [{"type": "RESUBMIT_JOB_AUTOMATICALLY", "description": "resubmitted as job 8"}]
    return [*records, error, {**error, "id": 8, "events": [{"type": "WALLTIME", "description": ""}], "array_id": 7}]


OAR_RECORDS = oar_records()
OAR_IDS = sorted({str(record["id"]) for record in OAR_RECORDS} | {"x", "²", "9" * 30})
OARSTAT = {str(record["id"]): record for record in OAR_RECORDS}
OAR_RESOURCES = json.loads((OAR / "oar25-resources-full.json").read_text())["items"]
OARSUB_ARRAY = (OAR / "oarsub-array.txt").read_text()  # oarsub --array 4
OARSUB = OARSUB_ARRAY + (OAR / "oarsub-single.txt").read_text()
# the documentation's jobs (5540 running, 5232 terminated with exit_code 0, oarstat's 87132 running, OAR 3's 4
# waiting) and the two added: 8 in Error after its WALLTIME event, and 7, which OAR resubmitted as 8
OAR_STATES: Known = {
    "4": (PENDING, None, None),
    "5232": (EXITED, 0, None),
    "5540": (RUNNING, None, None),
    "7": (KILLED, None, KillCause.WALLTIME),
    "8": (KILLED, None, KillCause.WALLTIME),
    "87132": (RUNNING, None, None),
    "x": (UNKNOWN, None, None),
    "9" * 30: (UNKNOWN, None, None),
}
OAR_CAPACITY = Capacity(0, 0, 0, 0, down=1)  # the documentation's one resource is Suspected


def oar_ssh(answers: dict[str, Result | str], **config) -> OarSsh:
    cluster = Cluster("fz", "oar-ssh", {"user": USER, **config})
    return OarSsh(cluster, AdapterContext(Path("/nonexistent"), Clock()), runner=Answers(answers))


@fuzz
@given(oarstat=command_result(json_text(OARSTAT)), ids=st.lists(st.sampled_from(OAR_IDS), max_size=5))
@example(oarstat=recorded(json.dumps(OARSTAT)), ids=sorted(OAR_STATES))
def test_oarstat_gives_states_or_an_adapter_error(oarstat, ids):
    states = clean(lambda: oar_ssh({"oarstat": oarstat}).states(ids))
    check_states(states, ids)
    check_capacity(clean(lambda: oar_ssh({"oarstat": oarstat}, slots=8).capacity()))
    if oarstat.ok and oarstat.stdout == json.dumps(OARSTAT):
        check_known(states, OAR_STATES)


@fuzz
@given(oarnodes=command_result(json_text(OAR_RESOURCES)), answer=command_result(command_output(OARSUB, "=")))
@example(oarnodes=recorded(json.dumps(OAR_RESOURCES)), answer=recorded(OARSUB_ARRAY))
def test_oarnodes_and_oarsub_answers_give_a_capacity_or_an_adapter_error(oarnodes, answer):
    capacity = clean(lambda: oar_ssh({"oarnodes": oarnodes, "oarstat": json.dumps(OARSTAT)}).capacity())
    check_capacity(capacity)
    found = clean(lambda: oar_ssh({"sh": answer, "oarstat": json.dumps(OARSTAT)}).find_batch("cigri.1"))
    check_ids(found)
    check_ids(clean(lambda: oar_ssh({"sh": answer}).submit("cigri.1", [spec(1), spec(2)])), 2)
    if oarnodes.ok and oarnodes.stdout == json.dumps(OAR_RESOURCES):
        assert capacity == OAR_CAPACITY
    if answer.ok and answer.stdout == OARSUB_ARRAY:
        array = ["87132", "87133", "87134", "87135"]
        assert found == array
        assert oar_ssh({"sh": answer}).submit("cigri.1", [spec(i) for i in range(4)]) == array


# ---- oar-rest: OAR 2.5 and OAR 3 ---------------------------------------------------------------------------

OAR_PAGE = {"total": len(OAR_RECORDS), "offset": 0, "items": OAR_RECORDS, "links": [{"rel": "self"}]}
OAR_DOCUMENTS = {
    "jobs": OAR_PAGE,
    "resources": {"items": OAR_RESOURCES, "total": len(OAR_RESOURCES)},
    "stress_factor": json.loads((OAR / "oar3-stress-factor.json").read_text()),
    "job": {**OAR_RECORDS[len(OAR_RECORDS) - 2], "stdout_file": "OAR.%jobid%.out", "launching_directory": "/h"},
    "post": json.loads((OAR / "oar25-post-jobs.json").read_text())["response"],
}


@st.composite
def oar_answers(draw, document: object) -> tuple[int, bytes]:
    status = draw(st.sampled_from((200, 200, 200, 200, 400, 404, 413, 500)))
    body = draw(json_text(document if status < 400 else json.loads((OAR / "oar25-error.json").read_text())))
    return status, body.encode("utf-8", "replace")


def oar_rest(flavour: str, answers: dict[str, tuple[int, bytes]]) -> OarRest:
    """oar-rest on a MockTransport answering by endpoint; a listing's later pages are empty."""

    def serve(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/oarapi/")
        if request.method == "POST":
            kind = "post"
        elif path.startswith(("jobs/details", "resources")) or path == "jobs":
            kind = "resources" if path.startswith("resources") else "jobs"
            if request.url.params.get("offset") not in (None, "0"):
                return httpx.Response(200, json={"items": []})
        elif path.startswith("media"):
            kind = "media"
        else:
            kind = "stress_factor" if path == "stress_factor" else "job"
        status, body = answers.get(kind, (200, b"the output") if kind == "media" else (404, b""))
        return httpx.Response(status, content=body)

    config = {"url": "https://oar.example/oarapi", "login": USER, "api_flavour": flavour}
    return OarRest(
        Cluster("fz", "oar-rest", config), AdapterContext(Path("/nonexistent"), Clock()), httpx.MockTransport(serve)
    )


@pytest.mark.parametrize("flavour", ["2.5", "3"])
@fuzz
@given(
    jobs=oar_answers(OAR_PAGE),
    job=oar_answers(OAR_DOCUMENTS["job"]),
    ids=st.lists(st.sampled_from(OAR_IDS), max_size=5),
)
@example(jobs=as_sent(OAR_PAGE), job=as_sent(OAR_DOCUMENTS["job"]), ids=sorted(OAR_STATES))
def test_oar_api_jobs_give_states_or_an_adapter_error(flavour, jobs, job, ids):
    answers = {**{k: as_sent(v) for k, v in OAR_DOCUMENTS.items()}, "jobs": jobs, "job": job}
    states = clean(lambda: oar_rest(flavour, answers).states(ids))
    check_states(states, ids)
    capacity = clean(lambda: oar_rest(flavour, answers).capacity())
    check_capacity(capacity)
    check_ids(clean(lambda: oar_rest(flavour, answers).find_batch("cigri.1")))
    clean(lambda: oar_rest(flavour, answers).tail(ids[0] if ids else "7", "stdout", 5))
    if (jobs, job) == (as_sent(OAR_PAGE), as_sent(OAR_DOCUMENTS["job"])):
        check_known(states, OAR_STATES)
        assert capacity == OAR_CAPACITY
        assert oar_rest(flavour, answers).tail("7", "stdout", 5) == "the output", "read at its stdout_file"


@pytest.mark.parametrize("flavour", ["2.5", "3"])
@fuzz
@given(
    resources=oar_answers(OAR_DOCUMENTS["resources"]),
    stress=oar_answers(OAR_DOCUMENTS["stress_factor"]),
    post=oar_answers(OAR_DOCUMENTS["post"]),
)
@example(
    resources=as_sent(OAR_DOCUMENTS["resources"]),
    stress=as_sent(OAR_DOCUMENTS["stress_factor"]),
    post=as_sent(OAR_DOCUMENTS["post"]),
)
def test_oar_api_resources_and_answers_give_a_capacity_or_an_adapter_error(flavour, resources, stress, post):
    answers = {k: as_sent(v) for k, v in OAR_DOCUMENTS.items()}
    answers |= {"resources": resources, "stress_factor": stress, "post": post}
    capacity = clean(lambda: oar_rest(flavour, answers).capacity())
    check_capacity(capacity)
    check_ids(clean(lambda: oar_rest(flavour, answers).submit("cigri.1", [spec(1), spec(2)])), 2)
    clean(lambda: oar_rest(flavour, answers).hold(["7", "8"]))
    if (resources, stress, post) == tuple(as_sent(OAR_DOCUMENTS[k]) for k in ("resources", "stress_factor", "post")):
        assert capacity == OAR_CAPACITY
        assert oar_rest(flavour, answers).submit("cigri.1", [spec(1)]) == ["4"], "the answer's OAR_JOB_ID"


# ---- packs: the wrapper's status lines ---------------------------------------------------------------------

PACK_LINES = "start 1 1795351590.5\nend 1 0 1795351600.25\nstart 2 1795351600.3\nskip 3\n"


@fuzz
@given(
    text=command_output(PACK_LINES, " "),
    state=st.sampled_from(list(RemoteState)),
    ids=st.lists(st.sampled_from(["9+1+3", "9+2+3", "9+3+3", "9+4+3"]), min_size=1, max_size=3),
)
@example(text=PACK_LINES, state=RemoteState.EXITED, ids=["9+1+3", "9+2+3", "9+3+3", "9+4+3"])
def test_pack_status_lines_give_states(text, state, ids):
    pack = RemoteStatus("9", state, ended_at=1795351700.0)
    lines = packing.statuses(text)
    states = {rid: packing.job_status(rid, pack, lines) for rid in ids}
    check_states(states, ids)
    if text == PACK_LINES and state == RemoteState.EXITED:  # job 1 ended, 2 ran when its pack ended, 3 skipped
        known: Known = {"9+1+3": (EXITED, 0, None), "9+2+3": (KILLED, None, KillCause.OTHER)}
        known |= {"9+3+3": (KILLED, None, None), "9+4+3": (KILLED, None, None)}  # never began: back to the bag
        check_known(states, known)
        returned = {"9+1+3": False, "9+2+3": False, "9+3+3": True, "9+4+3": True}
        assert {rid: status.returned for rid, status in states.items()} == {rid: returned[rid] for rid in states}


# ---- what the fuzzing found: each input that once crashed a parser -----------------------------------------
# (input, what crashed): each must now give a valid result or one of cigri's errors in one line


def squeue_row(**fields: str) -> str:
    row = {"task": "5_1", "array": "5", "state": "RUNNING", "reason": "None", "exit": "0", "start": "N/A"}
    row |= {"end": "N/A", "cpus": "1", "name": "cigri.a", **fields}
    return "|".join(row.values()) + "\n"


@pytest.mark.parametrize(
    "squeue",
    [
        squeue_row(name="cigri.a|x"),  # ten fields: unpacking them into nine raised ValueError
        squeue_row(cpus="x"),  # int() of NumCPUs raised ValueError
        squeue_row(state="COMPLETED", exit="²"),  # "²".isdigit() is true, int("²") raised ValueError
        squeue_row(state=" "),  # translate() took the first word of a blank state: IndexError
        squeue_row(state="COMPLETED", start="0001-01-01T00:00:00"),  # timestamp() of year 1: ValueError
    ],
)
def test_found_squeue_rows(squeue):
    check_states(clean(lambda: slurm_ssh({"squeue": squeue}).states(["5_1"])), ["5_1"])
    check_capacity(clean(lambda: slurm_ssh({"squeue": squeue, "sinfo": SINFO}).capacity()))


@pytest.mark.parametrize("sinfo", ["8/0/0\n", "x/0/0/8\n", "0/0/9/8\n", "²\n", "0\n", "-4\n"])
def test_found_sinfo_answers(sinfo):
    """Fewer than four counts, or not numbers, raised ValueError; "other" above the total made a negative
    capacity; node_cores took "²" for a number and 0 or -4 for a node's cores."""
    check_capacity(clean(lambda: slurm_ssh({"squeue": "", "sinfo": sinfo}).capacity()))
    check_cores(clean(lambda: slurm_ssh({"sinfo": sinfo}).node_cores()))


@pytest.mark.parametrize("answer", ["3450\n3451;cluster\n", "3450\n²\n", "²\n3\n", "٣;x\n"])
def test_found_sbatch_answers(answer):
    """find_batch's int() of the line count raised ValueError; a job id of other digits passed isdigit()."""
    check_ids(clean(lambda: slurm_ssh({"sh": answer}).find_batch("cigri.1")))
    check_ids(clean(lambda: slurm_ssh({"sh": answer}).submit("cigri.1", [spec(1)])), 1)


@pytest.mark.parametrize("sacct", ["5_1|COMPLETED|²:0|N/A|N/A\n", "5_1|FAILED|1:²|N/A|N/A\n", "5_1|FAILED|-1:0|x|y\n"])
def test_found_sacct_rows(sacct):
    check_states(clean(lambda: slurm_ssh({"squeue": "", "sacct": sacct}).states(["5_1"])), ["5_1"])


def rest_job(**fields) -> dict:
    job = {"name": "cigri.a", "user_name": USER, "array_job_id": 5, "array_task_id": 1, "job_state": "COMPLETED"}
    return {**job, "exit_code": 0, "start_time": 1795351590, "end_time": 1795351650, **fields}


FOUND_REST_JOBS = [
    '{"jobs": 1}',  # iterating an int: TypeError
    '{"jobs": [1, "x"]}',  # .get() of a record that is no object: AttributeError
    json.dumps({"jobs": [rest_job(exit_code=math.inf)]}),  # int(inf): OverflowError
    json.dumps({"jobs": [rest_job(exit_code=math.nan)]}),  # int(nan): ValueError
    json.dumps({"jobs": [rest_job(exit_code=-256)]}),  # a negative exit code
    json.dumps({"jobs": [rest_job(start_time=10**30, end_time=2**70)]}),  # times no clock reaches (nor SQLite)
    json.dumps({"jobs": [rest_job(array_task_id=None, array_task_string="1-4:0", job_state="PENDING")]}),  # step 0
    json.dumps({"jobs": [rest_job(array_task_id=None, array_task_string="²", job_state="PENDING")]}),
    json.dumps({"jobs": [rest_job(array_task_id=None, array_task_string="1-x", job_state="PENDING")]}),
    json.dumps({"jobs": [rest_job(array_task_id=None, array_task_string="0-99999999999", job_state="PENDING")]}),
    json.dumps({"jobs": [rest_job(comment="cigri batch of " + "9" * 5000 + " tasks")]}),  # int() of 5000 digits
    json.dumps({"jobs": [rest_job(cpus=-3, job_state="RUNNING")]}),  # negative slots in use
    json.dumps({"jobs": [rest_job(array_job_id=-5)]}),
]


def test_found_array_task_strings_beyond_any_array():
    """Ranges repeated in one record made millions of tasks (several gigabytes) before they were counted."""
    assert task_indices(",".join(["1-4000000"] * 1000)) == []
    assert task_indices("1-3,5-9:2") == [1, 2, 3, 5, 7, 9]


@pytest.mark.parametrize("body", FOUND_REST_JOBS)
def test_found_slurmrestd_jobs(rest_dir, body):
    answers = {"job": (200, body.encode()), "jobs": (200, body.encode()), "nodes": (200, b'{"nodes": []}')}
    check_states(clean(lambda: slurm_rest(rest_dir, answers).states(["5_1", "5_2"])), ["5_1", "5_2"])
    check_capacity(clean(lambda: slurm_rest(rest_dir, answers).capacity()))
    check_ids(clean(lambda: slurm_rest(rest_dir, answers).find_batch("cigri.a")))


@pytest.mark.parametrize(
    "body",
    [
        '{"nodes": [1]}',
        '{"nodes": 1}',
        '{"nodes": [{"cpus": -8, "alloc_cpus": 0, "state": "idle"}]}',  # a negative total
        '{"nodes": [{"cpus": 8, "state": "idle", "partitions": 1, "state_flags": 2}]}',  # iterating ints
        '{"nodes": [{"cpus": 1e400, "state": "idle"}]}',  # int(inf)
    ],
)
def test_found_slurmrestd_nodes(rest_dir, body):
    answers = {"nodes": (200, body.encode()), "jobs": (200, b'{"jobs": []}')}
    rest = slurm_rest(rest_dir, answers)
    rest.config["partition"] = "debug"
    check_capacity(clean(lambda: slurm_rest(rest_dir, answers).capacity()))
    check_capacity(clean(rest.capacity))
    check_cores(clean(lambda: slurm_rest(rest_dir, answers).node_cores()))


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, '{"job_id": true}'),  # a boolean is an int to isinstance: ids "True_1"
        (200, '{"job_id": -3}'),
        (500, '{"errors": 1}'),  # iterating an int
        (500, '{"errors": [{"error_number": [], "error": "x"}]}'),  # a list in a set: TypeError
        (400, '{"errors": [{"error_number": 9, "error": "bad\\nthing"}]}'),  # a message of two lines
        (502, "<html>\n<body>Bad gateway</body>\n</html>"),  # a message of several lines
    ],
)
def test_found_slurmrestd_answers(rest_dir, status, body):
    answers = {"submit": (status, body.encode()), "job": (status, body.encode())}
    check_ids(clean(lambda: slurm_rest(rest_dir, answers).submit("cigri.1", [spec(1)])), 1)
    clean(lambda: slurm_rest(rest_dir, answers).hold(["3434_1"]))


FOUND_OARSTAT = [
    "5",  # iterating an int: TypeError
    "true",
    '{"7": {"id": 7, "state": "Terminated", "exit_code": "²"}}',  # int("²"): ValueError
    '{"7": {"id": 7, "state": "Terminated", "exit_code": "' + "9" * 5000 + '"}}',  # int() of 5000 digits
    '{"7": {"id": "٣", "state": "Running"}}',
    '{"7": {"id": 7, "state": "Running", "start_time": 1e400}}',  # an infinite start time
    '{"7": {"id": 7, "state": "Running", "start_time": "0001-01-01 00:00:00"}}',  # timestamp(): ValueError
    '{"7": {"id": 7, "state": "Error", "events": [{"type": "RESUBMIT_JOB_AUTOMATICALLY", "description": "as ٣"}]}}',
]


@pytest.mark.parametrize("oarstat", FOUND_OARSTAT)
def test_found_oarstat_answers(oarstat):
    check_states(clean(lambda: oar_ssh({"oarstat": oarstat}).states(["7"])), ["7"])
    check_capacity(clean(lambda: oar_ssh({"oarstat": oarstat}, slots=8).capacity()))


@pytest.mark.parametrize("answer", ["OAR_JOB_ID=٣\nOAR_JOB_ID=4\n", "OAR_JOB_ID=²\n"])
def test_found_oarsub_answers(answer):
    """OAR_JOB_ID lines of other digits made job ids no OAR command takes."""
    check_ids(clean(lambda: oar_ssh({"sh": answer, "oarstat": "{}"}).find_batch("cigri.1")))
    check_ids(clean(lambda: oar_ssh({"sh": answer, "oarstat": "{}"}).submit("cigri.1", [spec(1), spec(2)])), 2)


FOUND_OAR_API = [
    ("jobs", 200, '{"items": [], "links": 1}'),  # iterating an int: TypeError
    ("jobs", 200, '{"items": 1}'),
    ("jobs", 200, '{"items": [{"id": 7, "state": "Running", "start_time": 1e400}]}'),
    ("stress_factor", 200, '{"GLOBAL_STRESS": ' + "9" * 400 + "}"),  # float() of a huge int: OverflowError
    ("post", 200, '{"cmd_output": "[ADMISSION RULE] no\\nOAR_JOB_ID=4\\n"}'),  # a message of two lines
    ("post", 200, '{"id": "٣"}'),
    ("holds", 200, '{"exit_status": 1, "cmd_output": "cannot\\nhold"}'),  # a message of two lines
]


@pytest.mark.parametrize("flavour", ["2.5", "3"])
@pytest.mark.parametrize(("kind", "status", "body"), FOUND_OAR_API)
def test_found_oar_api_answers(flavour, kind, status, body):
    answers = {k: (200, json.dumps(v).encode()) for k, v in OAR_DOCUMENTS.items()}
    waiting = {"items": [{"id": 7, "state": "Waiting", "owner": USER, "name": "cigri.1"}], "total": 1}
    answers |= {"jobs": (200, json.dumps(waiting).encode()), kind: (status, body.encode())}
    if kind == "holds":
        answers["post"] = answers.pop("holds")
    check_states(clean(lambda: oar_rest(flavour, answers).states(["7"])), ["7"])
    check_capacity(clean(lambda: oar_rest(flavour, answers).capacity()))
    check_ids(clean(lambda: oar_rest(flavour, answers).submit("cigri.1", [spec(1), spec(2)])), 2)
    clean(lambda: oar_rest(flavour, answers).hold(["7"]))


@pytest.mark.parametrize("flavour", ["2.5", "3"])
@pytest.mark.parametrize("name", ["\x00", "a\nb", "\ud800", "a" * 100_000])
def test_found_oar_output_file_names(flavour, name):
    """A job's stdout_file that no URL can carry raised httpx.InvalidURL or UnicodeEncodeError in tail."""
    job = {"id": 7, "state": "Running", "stdout_file": name, "launching_directory": "/home/u"}
    answers = {"job": (200, json.dumps(job).encode())}
    assert clean(lambda: oar_rest(flavour, answers).tail("7", "stdout", 5)) in ("", "the output", None)


@pytest.mark.parametrize(
    "text",
    [
        "end 1 999 5.0\n",
        "end 1 -1 5.0\n",
        "start 1 nan\n",
        "start 1 inf\n",
        "end 1 0 1e30\n",
        "skip 1\nend 1 0 5.0\n",  # the start of a skipped job: IndexError
        "start 1 5.0\nend 1 0 6.0\nend 1 0 7.0\n",  # the first end's exit status taken for the start time
    ],
)
def test_found_pack_status_lines(text):
    """An exit status no shell gives, or a time no clock reaches, was taken as it was."""
    pack = RemoteStatus("9", RemoteState.EXITED, ended_at=1795351700.0)
    lines = packing.statuses(text)
    check_states({"9+1+2": packing.job_status("9+1+2", pack, lines)}, ["9+1+2"])


FOUND_JDL_TEXTS = [
    "name: " + "9" * 5000,  # YAML's int() of 5000 digits: ValueError
    '{"name": ' + "9" * 5000 + "}",  # json's, not a JSONDecodeError
    "name: x\nwalltime: 2020-02-30",  # YAML's date: ValueError
    "name: !!timestamp 2020-99-99",
    "[" * 100_000,  # RecursionError
]


@pytest.mark.parametrize("text", FOUND_JDL_TEXTS, ids=range(len(FOUND_JDL_TEXTS)))
def test_found_jdl_texts(text):
    with pytest.raises(JdlError) as refused:
        jdl.parse(jdl.load_text(text))
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"max_jobs": "²"}, "max_jobs"),  # int("²"): ValueError
        ({"nb_jobs": "²", "params": None}, "nb_jobs"),
        ({"walltime": "9" * 5000}, "walltime"),  # int() of 5000 digits
        ({"resources": "core=" + "9" * 5000}, "resources"),
        ({"priority": "9" * 5000}, "priority"),
        ({"clusters": {"a\nb": {"walltime": "x"}}}, "walltime"),  # an error message of two lines
        ({"exec_file": "/bin/tr\0ue"}, "exec_file"),  # a NUL, which no command or path can carry
        ({"params": ["a\0b"]}, "params[0]"),
    ],
)
def test_found_jdl_mappings(changes, where):
    data = {k: v for k, v in {**BASE_JDL, **changes}.items() if v is not None}
    with pytest.raises(JdlError) as refused:
        consume(jdl.parse(data))
    assert where in str(refused.value) and "\n" not in str(refused.value)


def test_found_param_file_with_a_nul(tmp_path):
    """A NUL in a param line reached the job's argv, where subprocess refuses it (ValueError)."""
    (tmp_path / "p.txt").write_bytes(b"a 1\nb\x002\n")
    data = {k: v for k, v in BASE_JDL.items() if k != "params"}
    with pytest.raises(JdlError, match="param_file line 2"):
        consume(jdl.parse({**data, "param_file": str(tmp_path / "p.txt")}))


def test_found_command_output_that_is_not_utf8():
    """A command printing bytes that are not UTF-8 (a job name in Latin-1) raised UnicodeDecodeError."""
    result = LocalRunner().run(["printf", "caf\\351\\n"])
    assert result.ok and result.stdout.startswith("caf")


# ---- through the CLI: one line and an exit status, never a traceback -----------------------------------------

CLI_EXAMPLES = max(20, EXAMPLES // 20)  # each runs a command on a state file (and gridclusters, processes)


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cli")


def run_grid(folder: Path, *args: str):
    """``grid --state <folder>/state.db ARGS`` in-process; an exception that is not cigri's fails the test."""
    result = CliRunner().invoke(grid, ["--state", str(folder / "state.db"), *args], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


@settings(fuzz, max_examples=CLI_EXAMPLES)
@given(text=st.one_of(edited_text(EXAMPLE_JDLS), jdl_mappings().map(json.dumps)))
@example(text=FOUND_JDL_TEXTS[0])
@example(text=json.dumps({**BASE_JDL, "clusters": {"a\nb": {"walltime": "x"}}}))
def test_gridsub_says_what_is_wrong_with_a_jdl_in_one_line(cli_dir, text):
    (cli_dir / "sweep-params.txt").write_text("a 1\nb 2\n")
    (cli_dir / "jdl.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    result = run_grid(cli_dir, "gridsub", "--dry-run", str(cli_dir / "jdl.yaml"))
    if result.exit_code != 0:
        assert result.exit_code == JdlError.exit_code or result.exit_code in (1, 4, 5), result.output
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("grid gridsub: error: "), result.stderr


def fake_slurm(folder: Path) -> Path:
    """sinfo and squeue that print what the test wrote in their .out files."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("sinfo", "squeue"):
        (bin_dir / name).write_text(f"#!/bin/sh\ncat {bin_dir / name}.out\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


@settings(fuzz, max_examples=CLI_EXAMPLES)
@given(sinfo=command_output(SINFO, "/"), squeue=command_output(SQUEUE, "|"))
@example(sinfo="8/0/0\n", squeue=SQUEUE)
@example(sinfo=SINFO, squeue=squeue_row(cpus="x"))
def test_gridclusters_shows_a_cluster_answering_garbage_as_a_one_line_problem(cli_dir, sinfo, squeue):
    """What an RM answers reaches the CLI in gridclusters (each cluster's capacity): an answer cigri cannot
    read is that cluster's problem, in one line, and the listing goes on."""
    bin_dir = fake_slurm(cli_dir)
    if run_grid(cli_dir, "gridclusters", "--json").output.count('"fz"') == 0:
        run_grid(cli_dir, "gridclusters", "add", "fz", "--adapter", "slurm-ssh", "--bin-dir", str(bin_dir))
    (bin_dir / "sinfo.out").write_text(sinfo, errors="replace")
    (bin_dir / "squeue.out").write_text(squeue, errors="replace")
    result = run_grid(cli_dir, "gridclusters", "--json")
    assert result.exit_code == 0, result.output
    (row,) = [row for row in json.loads(result.stdout) if row["name"] == "fz"]
    assert "\n" not in row["problem"]
    assert row["problem"] or (row["slots"] is not None and row["slots"] >= 0)
