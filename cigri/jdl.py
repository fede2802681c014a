"""JDL: the campaign description, compatible with CiGri v3 (JSON), also accepted as YAML.

Keys are case-insensitive. Global-only keys describe the campaign; every other top-level key is a
default for each cluster that does not set it. Values may be given in CiGri's string forms
(``"false"``, ``"300"``, ``"00:5:00"``). Every error names the key path (``clusters.luke.walltime``).

JSON is read as CiGri's Ruby parser reads it (:func:`ruby_json`: ``"\\$HOME"`` is ``$HOME``); a key given twice
in one mapping, JSON or YAML, is refused, naming its path. CiGri's values are taken where cigri builds what
they mean (``nb_jobs: 0``, ``checkpointing_type: None``, ``jobs_type: normal``, OAR's own resource syntax for
OAR's ``-l``, ``cluster_job_type``, scp gathering as the copy), and refused, saying what to write instead,
where it does not (desktop_computing, semi-best-effort, nightly, iRods and collector gathering). The macros
(``{HOME}``, ``$HOME``, ``{CAMPAIGN_ID}``, ``{OAR_JOB_ID}``...) are :mod:`cigri.macros`'; ``{JDL_DIR}`` is
expanded here, at submission.

Resubmission and checkpoints (cigri's; CiGri stored ``checkpointing_type`` and ignored it):

- ``max_attempts`` (campaign-wide): how many times a job may run when it ends asking to run again (an RM kill
  other than a preemption, exit 66, exit 67); then it is a RESUBMIT_LIMIT event. Default: the configured
  ``resubmit.max_attempts`` (3).
- ``retry_resources`` (per cluster): ``{walltime: FACTOR, max_walltime: HH:MM:SS}``; after each walltime kill
  the job asks FACTOR times more walltime, never above the cap (:func:`_retry_resources`).
- ``checkpointing_type`` (per cluster): ``signal`` or ``exit-code``, with ``checkpointing_signal``,
  ``checkpointing_grace`` and ``checkpointing_exit_code`` (:func:`_checkpointing`). A resumed job finds
  ``CIGRI_RESUME=1`` in its environment (0 on a first start).

Input files and outputs (issue 13; CiGri stored its ``output_*`` keys and ignored them), all campaign-wide:

- ``data_source: DIR``: a folder of this machine (``~``, ``{HOME}``, ``{JDL_DIR}``; relative to the JDL's
  folder). A URL or ``host:path`` is refused: only local folders are built.
- ``input_files: TEMPLATE`` or a list of them: each job's files, relative names under data_source, where
  ``{1}``, ``{2}``... are the words of its param line (the arguments its exec_file gets: ``{1}`` is its name)
  and ``{name}`` its name. At submission every file is read (size, sha256): a missing one refuses the campaign.
  Before a job is submitted its files are staged into the cluster's cache (cluster options ``cache_dir``,
  default ``~/.cigri/cache``, and ``cache_quota``); the job finds them in ``$CIGRI_INPUT_DIR/<name>``
  (:mod:`cigri.staging`). Clusters whose adapter has no file path (REST) refuse such campaigns.
- ``output_gathering_method``: ``copy`` (the default when output_file is given) or ``none``; others refused.
  ``output_file: TEMPLATE`` or a list (same fields), under the job's exec_directory, and
  ``output_destination: DIR`` (a local folder): after a job terminates each of its outputs is copied to
  ``DIR/<job name>/<file>``, checksum compared; a missing or damaged one is an OUTPUT_ERROR event of the job. It
  holds the campaign until fixed or resubmitted: a campaign ends once its outputs are gathered.

Job names: the first word of each param line (of a param_file, of ``gridsub -c``, of a work_generator's answer)
is its job's name, unique in the campaign. It names the job's folder of outputs, so it must be a file name: one
holding a ``/``, an empty one (``''``), ``.`` or ``..`` is refused, naming its line (:func:`check_job_name`).
A file name made from a job's words stays under its folder (:func:`_relative`, :func:`under`).

Limits of the loader (checked first, before any key is read; a JdlError at once, naming the key path):

- :data:`MAX_DEPTH` (32): lists and mappings inside one another, the JDL's own mapping counting as the first
  (a JDL needs 4). A YAML anchor holding an alias of itself is refused so too.
- :data:`MAX_VALUES` (1 000 000): the values of the JDL, keys, list items and texts, with YAML's aliases
  expanded (each alias counts what its anchor holds): a few hundred bytes of nested aliases would expand to
  billions. Long lists of params go in a ``param_file``, which has no such limit.

On-demand work (cigri's, after BOINC's locality scheduling): ``work_generator`` (campaign-wide) is a command
asked for more jobs reading an input file when a cluster holding it has none left; see
:mod:`cigri.cycle.ondemand` for how it is called and what it answers.
"""

from __future__ import annotations

import difflib
import json
import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from .errors import JdlError
from .macros import local_path

if TYPE_CHECKING:
    import yaml  # imported by the functions reading YAML: a JDL in JSON, or none, never loads PyYAML

GLOBAL_ONLY = (
    "name",
    "clusters",
    "param_file",
    "nb_jobs",
    "params",
    "priority",
    "class",
    "finalize",
    "max_attempts",
    "work_generator",  # issue 13, item 3: on-demand work (cigri.cycle.ondemand)
    "data_source",
    "input_files",
    "output_gathering_method",
    "output_file",
    "output_destination",
    "jobs_type",  # CiGri's: normal (its default) is the only kind built
)
# output_gathering_method values built (CiGri stored the key, unused): scp is CiGri's name for a copy through
# the cluster's transport, which is what copy does (ssh for the ssh adapters)
OUTPUT_METHODS = ("copy", "scp", "none")
# values of CiGri's that cigri does not build, with what to write instead
NOT_BUILT_TYPES = ("semi-best-effort", "nightly")  # type: CiGri's day-and-night kinds
NOT_BUILT_JOBS_TYPES = ("desktop_computing",)
NOT_BUILT_OUTPUTS = ("irods", "collector")

# per-cluster keys and their defaults (CiGri v3's); None means "not set"
CLUSTER_DEFAULTS: dict[str, object] = {
    "exec_file": None,
    "exec_directory": "{HOME}",
    "resources": "/resource_id=1",
    "walltime": "01:00:00",
    "properties": "",
    "project": "",
    "type": "best-effort",
    "test_mode": False,
    "max_jobs": None,
    "prologue": [],
    "epilogue": [],
    "prologue_walltime": None,
    "epilogue_walltime": None,
    "environment": {},  # variables every job gets (the CIGRI_* ones win)
    "temporal_grouping": False,  # short jobs in sequence in one RM job: false, true, or seconds per RM job
    "dimensional_grouping": False,  # one RM job per node running one job per core
    "retry_resources": None,  # {walltime: factor, max_walltime: cap}: a job killed at its walltime asks more
    "checkpointing_type": None,  # signal or exit-code (see _checkpointing)
    "checkpointing_signal": None,  # with signal: the signal sent a grace before the walltime (default USR2)
    "checkpointing_grace": None,  # with signal: seconds before the walltime (default 300)
    "checkpointing_exit_code": None,  # the exit status meaning "checkpointed, resume me" (default: configured, 68)
    "cluster_job_type": "",  # CiGri's: OAR job types (-t), comma-separated, for the adapters that take them
}

CHECKPOINT_TYPES = ("signal", "exit-code")  # and none, CiGri's default (written "None")
CHECKPOINT_SIGNALS = ("USR1", "USR2", "TERM", "INT", "HUP", "ALRM", "URG", "XCPU")
DEFAULT_CHECKPOINT_SIGNAL = "USR2"  # OAR's default for oarsub --checkpoint; Slurm's --signal wants one named
DEFAULT_CHECKPOINT_GRACE = 300  # seconds: Slurm's --signal default is 60, OAR users give minutes
RESERVED_EXITS = (0, 66, 67)  # success, resubmit, resubmit at the end: no checkpoint code

MAX_WALLTIME = 366 * 86400
MAX_NB_JOBS = 100_000_000  # beyond this, a param_file says better what the jobs are
# the loader's limits (see the module's docstring): a JDL needs a depth of 4 and, but for its params, a few
# hundred values; a YAML of a few hundred bytes can alias its way to billions
MAX_DEPTH = 32
MAX_VALUES = 1_000_000

RESOURCE_NAMES = ("nodes", "node", "host", "network_address", "cpu", "core", "resource_id")
# numbers in ASCII digits, not too many for int(): \d would take other scripts' digits and any length
_RESOURCE = re.compile(r"^/?[a-z_]+=[0-9]{1,9}(?:/[a-z_]+=[0-9]{1,9})*$")  # levels apart by /
# OAR's own syntax (oarsub -l): groups joined by +, each a hierarchy of any resource types, with {SQL} filters
# before its levels (here each filter stands as {}: what is inside is OAR's, taken as written)
_FILTER = re.compile(r"\{[^{}]*\}")
_OAR_LEVEL = r"(?:\{\})?[a-z_][a-z0-9_]*=[0-9]{1,9}"  # a filter may come before a level or its /
_OAR_GROUP = re.compile(rf"^(?:\{{\}})?/?{_OAR_LEVEL}(?:(?:\{{\}})?/{_OAR_LEVEL})*$")  # levels apart by /
_WALLTIME = re.compile(r"^([0-9]{1,9})(?::([0-9]{1,9}))?(?::([0-9]{1,9}))?$")
_WHOLE = re.compile(r"\s*(-?[0-9]{1,18})\s*")
# param lines: one without quotes or backslashes needs no shell-like parsing, its words are its runs of
# non-blanks (most sweeps: a million such lines split 90x faster than through shlex)
_QUOTING = re.compile(r"[\"'\\]")
_FIRST_WORD = re.compile(r"[ \t\r\n]*([^ \t\r\n]+)")
_WORDS = re.compile(r"[^ \t\r\n]+")
# a block checked as a whole (job_blocks) has none of these: quotes and backslashes need the shell-like split, a
# CR takes the line by line way, a NUL is an error, and the other ASCII blanks but space, tab and newline (and
# the non-ASCII ones, _ODD_BLANK) would split words where str.split does and the shell-like split does not
_NOT_PLAIN = ("'", '"', "\\", "\r", "\0", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")
_ODD_BLANK = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_NOT_NAMES = frozenset((".", ".."))  # a job's name names a folder (check_job_name): these name others


def parse_walltime(value: object, path: str, what: str = "walltime") -> int:
    """Seconds from ``HH:MM:SS``, ``HH:MM``, plain seconds (int or string); errors name ``what`` it is."""
    if isinstance(value, bool):
        raise JdlError(path, f"{what} must be HH:MM:SS or seconds, not {value!r}")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str) and (m := _WALLTIME.match(value.strip())):
        parts = [int(p) for p in m.groups() if p is not None]
        if len(parts) == 1:
            seconds = parts[0]
        elif len(parts) == 2:
            seconds = parts[0] * 3600 + parts[1] * 60
        else:
            seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    else:
        raise JdlError(path, f"{what} must be HH:MM:SS or seconds, not {value!r}")
    if seconds <= 0:
        raise JdlError(path, f"{what} must be positive")
    if seconds > MAX_WALLTIME:
        raise JdlError(path, f"{what} must be at most {format_walltime(MAX_WALLTIME)} (a year)")
    return seconds


def format_walltime(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def parse_resources(value: object, path: str) -> dict[str, int]:
    """OAR's ``/nodes=2/core=4`` hierarchy as ``{"nodes": 2, "core": 4}``. OAR's own syntax is taken too
    (:func:`oar_resources`: ``nodes=3+licence=2``, ``{gpu='YES'}/nodes=1``): its first group's hierarchy,
    the one cigri counts a job's slots by (CiGri's documentation: the default resources MUST be first)."""
    if isinstance(value, str) and is_oar_syntax(value):
        groups, _ = _oar_groups(value, path)
        return _hierarchy(groups[0].replace("{}", ""), path)
    if not isinstance(value, str) or not _RESOURCE.match(value.replace(" ", "")):
        raise JdlError(path, f"resources must look like /nodes=1/core=4 or core=2, not {value!r}")
    return _hierarchy(value.replace(" ", ""), path)


def _hierarchy(value: str, path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in value.strip("/").split("/"):
        name, _, number = part.partition("=")
        if name not in RESOURCE_NAMES:
            raise JdlError(path, f"unknown resource {name!r} (known: {', '.join(RESOURCE_NAMES)})")
        if int(number) < 1:
            raise JdlError(path, f"{name} must be at least 1")
        out[name] = int(number)
    return out


def is_oar_syntax(resources: str) -> bool:
    """Whether resources use what only OAR takes: groups joined by ``+``, ``{...}`` filters."""
    return any(c in resources for c in "+{}")


def _oar_groups(value: str, path: str) -> tuple[list[str], list[str]]:
    """(the groups, each filter written ``{}``, spaces dropped; the filters, in order) of resources in OAR's
    own syntax: groups joined by ``+``, the first one of cigri's resource names (by which it counts a job's
    slots), the others of any resource type; a ``{...}`` filter may come before any level."""
    if any(c in value for c in "\0\r\n"):
        raise JdlError(path, "a line break or NUL cannot be passed to OAR")
    filters = _FILTER.findall(value)
    compact = re.sub(r"\s", "", _FILTER.sub("{}", value))
    groups = compact.split("+")
    if any(c in compact.replace("{}", "") for c in "{}") or not all(_OAR_GROUP.match(g) for g in groups):
        raise JdlError(
            path,
            f"{value!r} is not OAR's resource syntax (groups like /nodes=2/core=4 joined by +, a level may follow "
            "a {...} filter)",
        )
    return groups, filters


def oar_resources(value: str, path: str) -> str:
    """Resources in OAR's own syntax (:func:`_oar_groups`), checked, as OAR's -l gets them: without spaces
    but in their filters, which are OAR's SQL, taken as written."""
    groups, filters = _oar_groups(value, path)
    _hierarchy(groups[0].replace("{}", ""), path)
    pieces = "+".join(groups).split("{}")
    return pieces[0] + "".join(f"{kept}{piece}" for kept, piece in zip(filters, pieces[1:], strict=True))


def plain_resources(value: str, path: str, who: str) -> dict[str, int]:
    """One hierarchy of nodes and cores (:func:`parse_resources`), what the local and Slurm clusters take;
    OAR's own syntax is refused, saying what to write instead (``who``: the cluster, as a message names it)."""
    if is_oar_syntax(value):
        raise JdlError(
            path,
            f"{value!r} is OAR's syntax (+ or a {{...}} filter), which {who} does not take: give it one hierarchy "
            "of nodes and cores, such as /nodes=1/core=4",
        )
    return parse_resources(value, path)


_PROPERTY = re.compile(r"^\s*(\w+)\s*=\s*'([^']*)'\s*$")
_AND = re.compile(r"\s+AND\s+", re.I)


def property_terms(properties: str) -> list[tuple[str, str]] | str:
    """OAR ``properties`` of the simple form ``name='value' AND ...`` as (name, value) pairs (none for an
    empty text), or the first term not of that form. The Slurm adapter and the simulator take only these."""
    if not properties or not properties.strip():
        return []
    terms = []
    for term in _AND.split(properties.strip()):
        match = _PROPERTY.match(term)
        if not match:
            return term
        terms.append((match.group(1), match.group(2)))
    return terms


def resource_slots(resources: dict[str, int]) -> tuple[int, int]:
    """(nodes, slots per node) of a parsed resource request."""
    nodes = 1
    for key in ("nodes", "node", "host", "network_address"):
        nodes *= resources.get(key, 1)
    per_node = resources.get("cpu", 1) * resources.get("core", 1)
    return nodes, per_node


def _bool(value: object, path: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise JdlError(path, f"expected true or false, not {value!r}")


def _grouping(value: object, path: str) -> bool | int:
    """``temporal_grouping``: yes/no (CiGri's booleans), or the seconds one RM job should run (a whole
    number or HH:MM:SS): packs are then sized to that time rather than to the walltime."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    if value in (0, "0"):
        raise JdlError(path, "expected yes, no or the seconds one RM job should run (no turns packing off)")
    try:
        return parse_walltime(value, path)
    except JdlError:
        raise JdlError(path, f"expected yes, no or the seconds one RM job should run, not {value!r}") from None


def _int(value: object, path: str, minimum: int) -> int:
    if isinstance(value, bool):
        raise JdlError(path, f"expected a whole number, not {value!r}")
    if isinstance(value, str) and (m := _WHOLE.fullmatch(value)) and not m.group(1).startswith("-"):
        value = int(m.group(1))
    if not isinstance(value, int):
        raise JdlError(path, f"expected a whole number, not {value!r}")
    if value < minimum:
        raise JdlError(path, f"must be at least {minimum}")
    return value


def _priority(value: object, path: str) -> int:
    """A whole number, negative ones included (CiGri's strings too: ``"-3"``)."""
    if isinstance(value, str) and _WHOLE.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise JdlError(path, f"expected a whole number, not {value!r}")
    return value


def _no_nul(text: str, path: str) -> str:
    """``text``, unless it holds a NUL, which no command, argument or path can carry."""
    if "\0" in text:
        raise JdlError(path, "holds a NUL character, which no command, argument or path can carry")
    return text


def _str(value: object, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise JdlError(path, f"expected a string, not {type(value).__name__}")
    return _no_nul(str(value), path)


def _lines(value: object, path: str) -> list[str]:
    if isinstance(value, str):
        return [_no_nul(value, path)]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [_no_nul(line, f"{path}[{index}]") for index, line in enumerate(value)]
    raise JdlError(path, "expected a list of shell lines")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _environment(value: object, path: str) -> dict[str, str]:
    """The JDL's ``environment:``: variable names (as a shell takes them) to string values."""
    if not isinstance(value, dict):
        raise JdlError(path, "expected a mapping of variable names to values")
    for name, text in value.items():
        where = f"{path}.{name}"
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise JdlError(where, "not a variable name (letters, digits and _, not starting with a digit)")
        if name.upper().startswith("CIGRI_"):
            raise JdlError(where, "CIGRI_* variables are cigri's to set")
        if not isinstance(text, str):
            raise JdlError(where, f"expected a string, not {type(text).__name__} (quote it)")
        if any(c in text for c in "\0\n\r"):
            raise JdlError(where, "holds a NUL or a line break, which a job's environment cannot be given")
    return dict(value)


def _cluster_settings(raw: dict, path: str) -> dict:
    """Validate and normalise one cluster's settings (defaults already merged)."""
    out: dict = {}
    for key, value in raw.items():
        kpath = f"{path}.{key}"
        if value is None:
            out[key] = None
        elif key in (
            "exec_file",
            "exec_directory",
            "properties",
            "project",
        ):
            out[key] = _str(value, kpath)
        elif key == "resources":
            parse_resources(value, kpath)
            out[key] = oar_resources(value, kpath) if is_oar_syntax(value) else value.replace(" ", "")
        elif key in ("walltime", "prologue_walltime", "epilogue_walltime"):
            out[key] = parse_walltime(value, kpath)
        elif key == "type":
            kind = _str(value, kpath).strip().lower().replace("_", "-")
            if kind in ("besteffort", "best-effort"):
                kind = "best-effort"
            if kind in NOT_BUILT_TYPES:
                raise JdlError(kpath, f"{kind} is not built (cigri has no day and night): write best-effort or normal")
            if kind not in ("best-effort", "normal"):
                raise JdlError(kpath, f"type must be best-effort or normal, not {value!r}")
            out[key] = kind
        elif key == "cluster_job_type":
            out[key] = _job_types(value, kpath)
        elif key in ("test_mode", "dimensional_grouping"):
            out[key] = _bool(value, kpath)
        elif key == "temporal_grouping":
            out[key] = _grouping(value, kpath)
        elif key == "max_jobs":
            out[key] = _int(value, kpath, 1)
        elif key in ("prologue", "epilogue"):
            out[key] = _lines(value, kpath)
        elif key == "environment":
            out[key] = _environment(value, kpath)
        elif key == "checkpointing_grace":
            out[key] = parse_walltime(value, kpath, "the grace")
        elif key == "checkpointing_exit_code":
            out[key] = exit_code(value, kpath)
    if not out.get("exec_file"):
        raise JdlError(f"{path}.exec_file", "required (globally or for this cluster)")
    if out.get("walltime") is None:  # written as null: the default, as when it is not given
        out["walltime"] = parse_walltime(CLUSTER_DEFAULTS["walltime"], f"{path}.walltime")
    for stage in ("prologue", "epilogue"):
        if out.get(f"{stage}_walltime") is None:
            out[f"{stage}_walltime"] = out["walltime"]
    out["retry_resources"] = _retry_resources(raw.get("retry_resources"), out["walltime"], f"{path}.retry_resources")
    _checkpointing(out, raw, path)
    return out


_JOB_TYPE = re.compile(r"[A-Za-z0-9_.:=-]+")


def _job_types(value: object, path: str) -> str:
    """CiGri's ``cluster_job_type``: OAR job types (``-t``), comma-separated, as one text without spaces.
    besteffort is cigri's to add (``type: best-effort``)."""
    types = [word.strip() for word in _str(value, path).split(",") if word.strip()]
    for word in types:
        if word.lower() == "besteffort":
            raise JdlError(path, "besteffort is cigri's to add: write type: best-effort")
        if not _JOB_TYPE.fullmatch(word):
            raise JdlError(path, f"expected OAR job types joined by commas (such as deploy,idempotent), not {value!r}")
    return ",".join(types)


def exit_code(value: object, path: str) -> int:
    """An exit status a job may choose for itself: 1 to 255, not 66 nor 67 (cigri's resubmission codes)."""
    code = _int(value, path, 1)
    if code > 255 or code in RESERVED_EXITS:
        raise JdlError(path, f"expected an exit status from 1 to 255 other than 66 and 67, not {code}")
    return code


def _retry_resources(value: object, walltime: int, path: str) -> dict | None:
    """``retry_resources``: ``{walltime: factor, max_walltime: cap}``. A job its RM killed at its walltime runs
    again with its walltime times the factor (after each such kill), never above the cap. The JDL asks no
    memory (resources are nodes and cores): a memory retry would ask nothing more, so it is refused."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise JdlError(path, "expected a mapping: {walltime: FACTOR, max_walltime: HH:MM:SS}")
    value = _lower_keys(value, path)
    for key in value:
        if key in ("memory", "max_memory"):
            raise JdlError(f"{path}.{key}", "the JDL asks no memory (resources are nodes and cores): none to raise")
        if key not in ("walltime", "max_walltime"):
            raise JdlError(f"{path}.{key}", "unknown key (valid keys: max_walltime, walltime)")
    factor = value.get("walltime")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 1 < factor <= 100:
        raise JdlError(f"{path}.walltime", f"expected a factor above 1 (at most 100), not {factor!r}")
    if "max_walltime" not in value:
        raise JdlError(f"{path}.max_walltime", "required: the walltime retries never exceed")
    cap = parse_walltime(value["max_walltime"], f"{path}.max_walltime")
    if cap <= walltime:
        raise JdlError(f"{path}.max_walltime", f"must be above the walltime ({format_walltime(walltime)})")
    return {"walltime": float(factor), "max_walltime": cap}


def _checkpointing(out: dict, raw: dict, path: str) -> None:
    """``checkpointing_type``: ``signal`` (``checkpointing_signal`` is sent ``checkpointing_grace`` seconds
    before the walltime) or ``exit-code`` (the job exits with ``checkpointing_exit_code`` to be resumed);
    the signal keys only go with ``signal``."""
    kind = raw.get("checkpointing_type")
    if kind is not None:
        kind = _str(kind, f"{path}.checkpointing_type").strip().lower().replace("_", "-")
        if kind == "none":  # CiGri's default, written out
            kind = None
        elif kind not in CHECKPOINT_TYPES:
            given = raw["checkpointing_type"]
            raise JdlError(f"{path}.checkpointing_type", f"expected signal, exit-code or none, not {given!r}")
    out["checkpointing_type"] = kind
    if kind != "signal":
        for key in ("checkpointing_signal", "checkpointing_grace"):
            if raw.get(key) is not None:
                raise JdlError(f"{path}.{key}", "goes with checkpointing_type: signal")
        return
    grouped = [key for key in ("temporal_grouping", "dimensional_grouping") if out.get(key)]
    if grouped:  # the RM signals the pack, which runs several jobs: no job would get it as its own
        raise JdlError(f"{path}.checkpointing_type", f"signal does not go with {grouped[0]} (use exit-code)")
    name = _str(raw.get("checkpointing_signal") or DEFAULT_CHECKPOINT_SIGNAL, f"{path}.checkpointing_signal")
    name = name.strip().upper().removeprefix("SIG")
    if name not in CHECKPOINT_SIGNALS:
        raise JdlError(f"{path}.checkpointing_signal", f"expected one of {', '.join(CHECKPOINT_SIGNALS)}, not {name!r}")
    out["checkpointing_signal"] = name
    grace = out.get("checkpointing_grace") or DEFAULT_CHECKPOINT_GRACE
    if grace >= out["walltime"]:
        raise JdlError(
            f"{path}.checkpointing_grace",
            f"{grace} s before the walltime ({out['walltime']} s) leaves the job no time: give a shorter grace",
        )
    out["checkpointing_grace"] = grace


@dataclass(frozen=True)
class Jdl:
    name: str
    clusters: dict[str, dict]
    params: tuple[str, ...] | None = None
    param_file: Path | None = None
    nb_jobs: int | None = None
    test_mode: bool = False
    priority: int = 0  # higher first under fifo (the other strategies order by their own rules)
    klass: str = ""  # the JDL's ``class``: Scoot's requestor, matched by the classload strategy
    finalize: bool = False  # replicate the campaign's last jobs on idle slots of other clusters
    max_attempts: int | None = None  # runs of a job that end asking to run again (None: the configured limit)
    work_generator: str | None = None  # a command asked for more jobs reading a file (cigri.cycle.ondemand)
    data_source: Path | None = None  # the local folder input_files are read from
    input_files: tuple[str, ...] = ()  # templates of each job's input files (keys under data_source)
    output_files: tuple[str, ...] = ()  # templates of each job's outputs, under its exec_directory
    output_destination: Path | None = None  # the local folder outputs are gathered to (one folder per job)
    raw: dict = field(default_factory=dict)

    def as_record(self) -> dict:
        """What the state keeps of the JDL (the param lines live in the jobs table)."""
        source = (
            {"params": len(self.params)}
            if self.params is not None
            else ({"param_file": str(self.param_file)} if self.param_file else {"nb_jobs": self.nb_jobs})
        )
        return {
            "name": self.name,
            "clusters": self.clusters,
            "source": source,
            "priority": self.priority,
            "class": self.klass,
            "finalize": self.finalize,
            "max_attempts": self.max_attempts,
            **({"work_generator": self.work_generator} if self.work_generator else {}),
            **(
                {"data_source": str(self.data_source), "input_files": list(self.input_files)}
                if self.input_files
                else {}
            ),
            **(
                {"output_file": list(self.output_files), "output_destination": str(self.output_destination)}
                if self.output_files
                else {}
            ),
        }

    def param_blocks(self, size: int) -> Iterator[tuple[int, list[str]]]:
        """The param lines in blocks of up to ``size``: (number of the block's first line, its lines). A param
        file's lines keep their newline and its blank lines are there, so that numbers stay right; blocks
        stream, whatever the file's size."""
        if self.params is not None:
            for start in range(0, len(self.params), size):
                yield start, list(self.params[start : start + size])
        elif self.nb_jobs is not None:
            for start in range(0, self.nb_jobs, size):
                yield start, [str(i) for i in range(start, min(start + size, self.nb_jobs))]
        else:
            try:
                with open(self.param_file, encoding="utf-8", newline="\n") as handle:
                    number = 1
                    while block := list(islice(handle, size)):
                        yield number, block
                        number += len(block)
            except OSError as exc:
                raise JdlError("param_file", f"cannot read {self.param_file}: {exc.strerror}") from exc
            except UnicodeDecodeError as exc:
                raise JdlError("param_file", f"{self.param_file} is not UTF-8 text") from exc

    def where(self, number: int) -> str:
        if self.params is not None:
            return f"params[{number}]"
        if self.nb_jobs is not None:
            return f"nb_jobs[{number}]"
        return f"param_file line {number}"


def split_params(line: str, where: str) -> list[str]:
    """Words of a param line, as a POSIX shell would split it, with nothing expanded."""
    if not _QUOTING.search(line):  # no quote nor backslash: the words are the runs of non-blanks
        words = _WORDS.findall(line)
        if not words:
            raise JdlError(where, "empty param line")
        return words
    try:
        words = shlex.split(line, posix=True)
    except ValueError as exc:
        raise JdlError(where, f"cannot split {line!r}: {exc}") from exc
    if not words:
        raise JdlError(where, "empty param line")
    return words


JOB_BLOCK = 16_384  # param lines checked and inserted together


class JobNames(Protocol):
    """The job names a campaign holds, against which :func:`job_blocks` checks each block's: a set for a dry
    run's or a test's jobs (:class:`NameSet`), a table of the state for a submission's
    (:meth:`cigri.store.Store.campaign_names`), so that memory stays flat however many jobs a campaign has."""

    def add(self, names: list[str]) -> bool:
        """Hold ``names`` if none is held already and none repeats among them (True); else hold none of them."""
        ...

    def taken(self, names: list[str]) -> set[str]:
        """Those of ``names`` held already."""
        ...


class NameSet:
    """:class:`JobNames` in memory."""

    def __init__(self, names: Iterable[str] = ()):
        self._names = set(names)

    def add(self, names: list[str]) -> bool:
        new = set(names)
        if len(new) != len(names) or not self._names.isdisjoint(new):
            return False
        self._names |= new
        return True

    def taken(self, names: list[str]) -> set[str]:
        return self._names.intersection(names)


class JobBlock(NamedTuple):
    """Jobs in a row: their names and their param lines, side by side (the store binds the two lists)."""

    names: list[str]
    lines: list[str]


def job_blocks(jdl: Jdl, names: JobNames | None = None, size: int = JOB_BLOCK) -> Iterator[JobBlock]:
    """The campaign's jobs in blocks, checking that names are file names (:func:`check_job_name`) and unique
    in the campaign (held by ``names``, a new :class:`NameSet` by default). This runs once per job of a
    million-job campaign, so a block whose text is plain (:func:`_plain_block`) is checked as a whole by C
    code, and any other block line by line, which also finds the line an error is about. Every name enters
    here: gridsub, gridsub -c and a work_generator's answer."""
    held = names if names is not None else NameSet()
    from_file = jdl.params is None and jdl.nb_jobs is None
    for first, lines in jdl.param_blocks(size):
        block = _plain_block(lines, from_file)
        if block is not None and held.add(block.names):
            yield block
        else:
            yield _checked_block(jdl, first, lines, held, from_file)


def _plain_block(lines: list[str], from_file: bool) -> JobBlock | None:
    """The block's jobs when its text needs no shell-like parsing and splits on spaces and tabs alone, its
    names all file names; None when it must go line by line (which finds the line at fault, if one is)."""
    text = "".join(lines) if from_file else "\n".join(lines)
    if any(char in text for char in _NOT_PLAIN):
        return None
    if not text.isascii() and (not from_file or _ODD_BLANK.search(text)):  # params: ASCII holds no lone surrogate
        return None
    if from_file:
        kept = [line for line in text.split("\n") if line and not line.isspace()]
    elif text.count("\n") == len(lines) - 1:  # no param line holding a newline
        kept = lines
    else:
        return None
    try:
        names = [line.split(None, 1)[0] for line in kept]
    except IndexError:  # a blank param line (a param_file's are skipped above): an error, line by line
        return None
    if "/" in "".join(names) or not _NOT_NAMES.isdisjoint(names):
        return None
    return JobBlock(names, kept)


def check_job_name(name: str, where: str) -> None:
    """A job's name names its folder of outputs (``output_destination/<name>/``, :mod:`cigri.cycle.files`):
    refused when it would name another folder (a /, ``.``, ``..``) or none (empty). A leading ``-`` is kept:
    in every path cigri makes the name follows a folder, and the exec_file gets it as the user wrote it (as
    CiGri's did)."""
    if not name:
        problem = "is empty"
    elif "/" in name:
        problem = "holds a /"
    elif name in _NOT_NAMES:
        problem = "is not a file name"
    else:
        return
    raise JdlError(where, f"job name {name!r} {problem}: a job's name names its folder of outputs (no /, not . nor ..)")


def _checked_block(jdl: Jdl, first: int, lines: list[str], held: JobNames, from_file: bool) -> JobBlock:
    """A block line by line: the shell-like split where quotes need it, and the first error in the lines'
    order, a name the campaign held before the block included."""
    quoting, first_word = _QUOTING.search, _FIRST_WORD.match
    names: list[str] = []
    kept: list[str] = []
    numbers: list[int] = []
    mine: set[str] = set()  # the block's names (a block's worth of memory)
    error = None
    try:
        for number, line in enumerate(lines, first):
            if from_file:
                line = line.rstrip("\r\n")
                if not line or line.isspace():
                    continue
            else:
                _check_text(line, jdl.where(number))
            _no_nul(line, jdl.where(number))
            match = None if quoting(line) else first_word(line)
            name = match.group(1) if match else split_params(line, jdl.where(number))[0]
            check_job_name(name, jdl.where(number))
            if name in mine:
                raise JdlError(jdl.where(number), f"job name {name!r} is used twice in the campaign")
            mine.add(name)
            names.append(name)
            kept.append(line)
            numbers.append(number)
    except JdlError as exc:
        error = exc
    if error is not None or not held.add(names):
        taken = held.taken(names)
        for name, number in zip(names, numbers, strict=True):
            if name in taken:
                raise JdlError(jdl.where(number), f"job name {name!r} is used twice in the campaign")
        if error is not None:
            raise error
    return JobBlock(names, kept)


def jobs_of(jdl: Jdl, names: JobNames | None = None) -> Iterator[tuple[str, str]]:
    """(name, param line) of each job, one by one (see :func:`job_blocks`)."""
    for block in job_blocks(jdl, names):
        yield from zip(block.names, block.lines, strict=True)


def _lower_keys(data: dict, path: str) -> dict:
    out = {}
    for key, value in data.items():
        if not isinstance(key, str):
            raise JdlError(path, f"key {key!r} is not a string")
        low = key.lower()
        if low in out:
            raise JdlError(f"{path}.{low}" if path else low, "given twice (keys are case-insensitive)")
        out[low] = value
    return out


def _check_keys(keys, allowed, path: str) -> None:
    for key in keys:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            if path and key in GLOBAL_ONLY:
                raise JdlError(where, "a campaign-wide key: give it at the top level, not for one cluster")
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]}?" if close else f"valid keys: {', '.join(sorted(allowed))}"
            raise JdlError(where, f"unknown key ({hint})")


def _expand_jdl_dir(values: dict, jdl_dir: str) -> dict:
    """cigri's ``{JDL_DIR}`` macro (the JDL file's folder, or the current one): lets an example JDL name
    files beside it. Expanded at submission, in strings and lists of strings (not in params)."""

    def expand(value):
        if isinstance(value, str):
            return value.replace("{JDL_DIR}", jdl_dir)
        if isinstance(value, list):
            return [expand(v) for v in value]
        return value

    return {k: (v if k in ("params", "clusters", "name") else expand(v)) for k, v in values.items()}


class _Mapping(dict):
    """A mapping of a JDL's text, which knows the first key it was given twice (``twice``): JSON and PyYAML
    keep the last value silently; :func:`_walk` refuses it, naming its path."""

    twice: object = None


def _json_mapping(pairs: list[tuple[str, object]]) -> dict:
    data = _Mapping()
    for key, value in pairs:
        if key in data and data.twice is None:
            data.twice = key
        data[key] = value
    return data


@cache
def _yaml_loader() -> type[yaml.SafeLoader]:
    """PyYAML's safe loader, but its mappings note a key given twice (YAML forbids it). A merge (``<<``) is no
    duplicate: the keys written beside it override it."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("tag:yaml.org,2002:map", _yaml_mapping)
    return Loader


def _yaml_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode):
    data = _Mapping()
    yield data
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in seen and data.twice is None:
                data.twice = key
            seen.add(key)
        except TypeError:  # an unhashable key: construct_mapping says so
            pass
    data.update(loader.construct_mapping(node))


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_JSON_ESCAPE = re.compile(r"\\(.)", re.S)


def ruby_json(text: str) -> str:
    """JSON text as CiGri's parser (Ruby's) reads it: in a string, a backslash before a character JSON gives no
    escape for stands for that character (``"\\$HOME"`` is ``$HOME``)."""
    if "\\" not in text:
        return text

    def unescape(escape: re.Match) -> str:
        return escape.group(0) if escape.group(1) in '"\\/bfnrtu' else escape.group(1)

    def string(match: re.Match) -> str:
        found = match.group(0)
        return _JSON_ESCAPE.sub(unescape, found) if "\\" in found else found

    return _JSON_STRING.sub(string, text)


def load_text(text: str, origin: str = "JDL") -> dict:
    """A JDL's mapping from its text: JSON (as CiGri reads it: :func:`ruby_json`) or YAML."""
    stripped = text.lstrip()
    kind = "JSON" if stripped.startswith("{") else "YAML"
    try:
        if kind == "JSON":
            data = json.loads(ruby_json(text), object_pairs_hook=_json_mapping)
        else:
            data = _load_yaml(text, origin)
    except json.JSONDecodeError as exc:
        raise JdlError("", f"{origin} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except RecursionError:
        raise JdlError("", f"{origin} nests lists or mappings too deeply") from None
    except ValueError as exc:  # a number of more than 4300 digits, a date that is none (YAML's 2020-02-30)
        raise JdlError("", f"{origin} is not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise JdlError("", f"{origin} must be a mapping of keys to values")
    return data


def _load_yaml(text: str, origin: str) -> object:
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())  # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise JdlError("", f"{origin} is not valid YAML{where}") from exc


def _check_text(value: object, path: str) -> None:
    """A string must be storable as UTF-8 (JSON can carry lone surrogates, SQLite cannot)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise JdlError(path, "holds characters that are not valid Unicode text") from None


def _check_tree(data: dict) -> None:
    """Every string of the JDL (:func:`_check_text`), and its shape within :data:`MAX_DEPTH` and
    :data:`MAX_VALUES`, checked before anything else walks it."""
    _walk(data, "", 1, {})


def _walk(value: dict | list, path: str, depth: int, walked: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(values ``value`` holds, itself included, once YAML's aliases are expanded; lists and mappings nested in
    it, itself included). A YAML alias is the very object of its anchor: each list or mapping is walked once
    (``walked``: by id), so that a bomb costs its size in text, not what it expands to; an alias of an anchor
    holding it (a list inside itself) is met again before it is walked, and stops at MAX_DEPTH."""
    if depth > MAX_DEPTH:
        raise JdlError(path, f"nests lists or mappings more than {MAX_DEPTH} deep (the JDL's limit)")
    if id(value) in walked:
        size, height = walked[id(value)]
        if depth + height - 1 > MAX_DEPTH:
            raise JdlError(path, f"nests lists or mappings more than {MAX_DEPTH} deep (the JDL's limit)")
        return size, height
    mapping = isinstance(value, dict)
    if mapping and getattr(value, "twice", None) is not None:
        raise JdlError(_item_path(path, value.twice, True), "given twice")
    size, height = 1 + (len(value) if mapping else 0), 1  # a mapping's keys count too
    for key, item in value.items() if mapping else enumerate(value):
        if mapping:
            _check_text(key, path or "JDL")
        if isinstance(item, dict | list):
            below, nested = _walk(item, _item_path(path, key, mapping), depth + 1, walked)
            size, height = size + below, max(height, nested + 1)
        else:  # a million params: their paths are only made for an error
            if isinstance(item, str) and not item.isascii():
                _check_text(item, _item_path(path, key, mapping))
            size += 1
        if size > MAX_VALUES:
            limit = f"{MAX_VALUES:,}".replace(",", " ")
            raise JdlError(
                path,
                f"holds more than {limit} values, aliases expanded (the JDL's limit: long lists of params go in a "
                "param_file)",
            )
    walked[id(value)] = size, height
    return size, height


def _item_path(path: str, key: object, mapping: bool) -> str:
    if not mapping:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def parse(data: dict, *, base_dir: Path | None = None, test: bool | None = None) -> Jdl:
    """Validate a JDL mapping. ``base_dir`` resolves a relative param_file; ``test`` forces the type."""
    _check_tree(data)
    top = _lower_keys(data, "")
    _check_keys(top, set(GLOBAL_ONLY) | set(CLUSTER_DEFAULTS), "")
    if "name" not in top:
        raise JdlError("name", "required")
    name = _str(top["name"], "name").strip()
    if not name:
        raise JdlError("name", "must not be empty")
    clusters_raw = top.get("clusters")
    if not isinstance(clusters_raw, dict) or not clusters_raw:
        raise JdlError("clusters", "required: a non-empty mapping of cluster names to settings")

    jdl_dir = str((base_dir or Path.cwd()).resolve())
    top = _expand_jdl_dir(top, jdl_dir)
    defaults = {key: top[key] for key in CLUSTER_DEFAULTS if key in top}
    clusters: dict[str, dict] = {}
    for cluster_name, settings in clusters_raw.items():
        path = f"clusters.{cluster_name}"
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            raise JdlError(path, "expected a mapping of settings")
        own = _expand_jdl_dir(_lower_keys(settings, path), jdl_dir)
        _check_keys(own, set(CLUSTER_DEFAULTS), path)
        merged = {**CLUSTER_DEFAULTS, **defaults, **own}
        clusters[str(cluster_name)] = _cluster_settings(merged, path)

    sources = [key for key in ("params", "param_file", "nb_jobs") if key in top]
    if len(sources) != 1:
        raise JdlError(
            "params",
            "give exactly one of params, param_file or nb_jobs" + (f" (found {', '.join(sources)})" if sources else ""),
        )
    params = param_file = nb_jobs = None
    if "params" in top:
        raw = top["params"]
        if not isinstance(raw, list) or not raw:
            raise JdlError("params", "expected a non-empty list of param lines")
        for index, line in enumerate(raw):
            if isinstance(line, bool) or not isinstance(line, (str, int, float)):
                raise JdlError(f"params[{index}]", "expected a string")
            _no_nul(str(line), f"params[{index}]")
        params = tuple(str(line) for line in raw)
    elif "param_file" in top:
        path = Path(local_path(_str(top["param_file"], "param_file")))  # read here, at submission: the home is ours
        param_file = path if path.is_absolute() else (base_dir or Path.cwd()) / path
    else:
        nb_jobs = _int(top["nb_jobs"], "nb_jobs", 0)  # 0 as in CiGri: a campaign gridsub -c gives jobs later
        if nb_jobs > MAX_NB_JOBS:
            raise JdlError("nb_jobs", f"at most {MAX_NB_JOBS:,} jobs".replace(",", " "))

    _jobs_type(top.get("jobs_type"))
    test_mode = any(s["test_mode"] for s in clusters.values()) if test is None else test
    data_source, input_files = _inputs(top, base_dir)
    output_files, output_destination = _outputs(top, base_dir)
    return Jdl(
        name=name,
        clusters=clusters,
        params=params,
        param_file=param_file,
        nb_jobs=nb_jobs,
        test_mode=test_mode,
        priority=_priority(top.get("priority", 0), "priority"),
        klass=_str(top.get("class", ""), "class"),
        finalize=_bool(top.get("finalize", False), "finalize"),
        max_attempts=None if top.get("max_attempts") is None else _int(top["max_attempts"], "max_attempts", 1),
        work_generator=_command(top["work_generator"], "work_generator") if "work_generator" in top else None,
        data_source=data_source,
        input_files=input_files,
        output_files=output_files,
        output_destination=output_destination,
        raw=data,
    )


def _jobs_type(value: object) -> None:
    """CiGri's ``jobs_type``: normal, its default, is the only kind (desktop_computing, the other, CiGri refused
    at submission too)."""
    if value is None:
        return
    kind = _str(value, "jobs_type").strip().lower()
    if kind in NOT_BUILT_JOBS_TYPES:
        raise JdlError(
            "jobs_type",
            f"{kind} is not built (CiGri refused such campaigns too): give the jobs with params, param_file or "
            "nb_jobs and write jobs_type: normal, or leave it out",
        )
    if kind != "normal":
        raise JdlError("jobs_type", f"expected normal (CiGri's default), not {value!r}")


def _command(value: object, path: str) -> str:
    """A command line (split as a POSIX shell would, nothing expanded), not empty."""
    text = _str(value, path)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise JdlError(path, f"cannot split {text!r}: {exc}") from exc
    if not words:
        raise JdlError(path, "expected a command, got an empty string")
    return text


_FIELD = re.compile(r"\{([^{}]*)\}")


def _templates(value: object, path: str) -> tuple[str, ...]:
    """``input_files``/``output_file``: one template or a list of them. A template is a relative path whose
    ``{1}``, ``{2}``... are the words of the job's param line (the arguments its exec_file gets, ``{1}`` its
    name) and ``{name}`` its name; no other ``{...}``."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(item, str) for item in items):
        raise JdlError(path, "expected a file name template or a non-empty list of them")
    for index, item in enumerate(items):
        where = f"{path}[{index}]" if isinstance(value, list) else path
        for name in _FIELD.findall(item):
            if name != "name" and not (name.isdigit() and int(name) >= 1):
                raise JdlError(where, f"unknown field {{{name}}} (use {{1}}, {{2}}... or {{name}})")
        _relative(_FIELD.sub("x", item), where)
    return tuple(items)


def _relative(key: str, path: str) -> str:
    """A file name under a folder: not empty, not absolute, no ``..``, no control character."""
    if not key or key.startswith("/") or ".." in key.split("/") or any(ord(c) < 32 for c in key):
        raise JdlError(path, f"{key!r} is not a relative file name (no leading /, no .., no control characters)")
    return key


def under(folder: str, name: str) -> str | None:
    """``folder/name``, or None when ``name`` (made of a job's words) leads out of ``folder``, or to it. Checked
    as written (``..`` against the names before it), for local and cluster paths alike."""
    base = posixpath.normpath(folder)
    if posixpath.normpath(posixpath.join(base, name)).startswith(base.rstrip("/") + "/"):
        return f"{folder.rstrip('/')}/{name}"
    return None


def expand_files(templates: tuple[str, ...], words: list[str], path: str) -> list[str]:
    """The file names a job's templates give with its param words, each once, in the templates' order."""
    out: list[str] = []

    def field_value(match: re.Match) -> str:
        name = match.group(1)
        if name == "name":
            return words[0]
        if int(name) > len(words):
            raise JdlError(path, f"{{{name}}} but the job's param line has {len(words)} words")
        return words[int(name) - 1]

    for template in templates:
        key = _relative(_FIELD.sub(field_value, template), path)
        if key not in out:
            out.append(key)
    return out


def _local_folder(value: object, path: str, base_dir: Path | None) -> Path:
    """A folder of this machine (the submitter's home for ``{HOME}``, ``$HOME``, ``~``; relative to the JDL's
    folder)."""
    text = _str(value, path).strip()
    if "://" in text or re.match(r"^[\w.-]+@?[\w.-]*:", text):
        raise JdlError(path, f"only a local folder is built, not {text!r} (no URL nor host:path)")
    folder = Path(local_path(text))
    return folder if folder.is_absolute() else (base_dir or Path.cwd()) / folder


def _inputs(top: dict, base_dir: Path | None) -> tuple[Path | None, tuple[str, ...]]:
    """``data_source`` (a local folder) and ``input_files`` go together; the folder must exist."""
    if "input_files" not in top and "data_source" not in top:
        return None, ()
    if "input_files" not in top:
        raise JdlError("input_files", "required with data_source (the files each job reads)")
    if "data_source" not in top:
        raise JdlError("data_source", "required with input_files (the local folder they are read from)")
    folder = _local_folder(top["data_source"], "data_source", base_dir)
    if not folder.is_dir():
        raise JdlError("data_source", f"{folder} is not a folder")
    return folder, _templates(top["input_files"], "input_files")


def _outputs(top: dict, base_dir: Path | None) -> tuple[tuple[str, ...], Path | None]:
    """``output_gathering_method`` (copy, the default when output_file is given; none), ``output_file``
    (templates, under the job's exec_directory) and ``output_destination`` (a local folder, created)."""
    method = top.get("output_gathering_method")
    if method is not None:
        written = _str(method, "output_gathering_method").strip()
        method = written.lower()
        if method in NOT_BUILT_OUTPUTS:
            raise JdlError(
                "output_gathering_method",
                f"{written} is not built: write copy (or scp: outputs are copied back through the cluster's "
                "transport), or none and gather them in the epilogue",
            )
        if method not in OUTPUT_METHODS:
            raise JdlError("output_gathering_method", f"only {', '.join(OUTPUT_METHODS)} are built, not {method!r}")
    given = [key for key in ("output_file", "output_destination") if key in top]
    if method == "none" or (method is None and not given):
        if given:
            raise JdlError(given[0], "goes with output_gathering_method: copy (outputs are not gathered)")
        return (), None
    for key in ("output_file", "output_destination"):
        if key not in top:
            raise JdlError(key, "required to gather outputs (output_file and output_destination go together)")
    files = _templates(top["output_file"], "output_file")
    return files, _local_folder(top["output_destination"], "output_destination", base_dir)


def load(path: str | os.PathLike, *, test: bool | None = None) -> Jdl:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise JdlError("", f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise JdlError("", f"{path} is not UTF-8 text") from exc
    return parse(load_text(text, str(path)), base_dir=path.resolve().parent, test=test)
