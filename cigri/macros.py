"""The JDL's macros: the words cigri replaces in a campaign's texts, where, and by what. cigri-jdl(5)'s MACROS
section is made from :data:`MACROS`; each function here expands them in one kind of place.

The home, as CiGri meant it, is two homes:

- in what runs on a cluster (exec_file, exec_directory, prologue, epilogue), the home of the cluster's user,
  there: :func:`expand_home` with the home its adapter knows (this user's on a local cluster, the ssh login's
  ``$HOME``, the ``home`` option of a REST cluster); a prologue's lines get ``$HOME``, for their shell to expand
  where they run (:func:`stage_script`);
- in what gridsub reads or writes on this machine (param_file, data_source, output_destination), the
  submitter's home (:func:`local_path`).

Prologues and epilogues run under bash where the cluster has it, else sh (:func:`stage_argv`): CiGri's users
write ``source`` and ``[[``, which OAR ran with bash.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

# {HOME}, $HOME and ${HOME}, with the backslash CiGri's README puts before $HOME in JSON ("\\$HOME"); not
# $HOMEDIR, another variable
_HOME = re.compile(r"\{HOME\}|\\?\$(?:HOME(?![A-Za-z0-9_])|\{HOME\})")
# the variables CiGri's macros became in its prologues, which it wrote escaped for OAR's API to unescape
_ESCAPED = re.compile(r"\\\$(HOME|CIGRI_CAMPAIGN_ID|OAR_JOB_ID)(?![A-Za-z0-9_])")

# the shell a prologue or epilogue runs in: $@ are its lines (one word each: the Slurm and OAR adapters carry
# no line break in a job's words), bash when the cluster has it, else sh; $0 names it in error messages
STAGE_SHELL = (
    'script=$(printf "%s\\n" "$@"); '
    'if command -v bash >/dev/null 2>&1; then exec bash -c "$script" cigri-stage; fi; '
    'exec /bin/sh -c "$script" cigri-stage'
)


@dataclass(frozen=True)
class Macro:
    name: str
    where: str
    value: str


CLUSTER_TEXTS = "exec_file, exec_directory, prologue and epilogue"
LOCAL_PATHS = "param_file, data_source and output_destination"
_HOMES = (
    f"In {CLUSTER_TEXTS}: the home of the cluster's user, on the cluster (this user's on a local cluster, $HOME "
    "of the ssh login, the home option of a REST cluster). "
    f"In {LOCAL_PATHS}: the submitter's home, on this machine."
)

MACROS: tuple[Macro, ...] = (
    Macro("{HOME}", f"{CLUSTER_TEXTS}; {LOCAL_PATHS}", _HOMES),
    Macro(
        "$HOME",
        f"{CLUSTER_TEXTS}; {LOCAL_PATHS}",
        "The same home as {HOME}, also written ${HOME}, or \\$HOME (CiGri's README escapes it so in JSON).",
    ),
    Macro(
        "~",
        "at the start of exec_file, exec_directory, param_file, data_source and output_destination",
        "The same home as {HOME}; in a prologue or epilogue, the shell's own ~.",
    ),
    Macro("{CAMPAIGN_ID}", CLUSTER_TEXTS, "The campaign's id (also in the job's environment: CIGRI_CAMPAIGN_ID)."),
    Macro(
        "{OAR_JOB_ID}",
        "prologue and epilogue",
        "The resource manager's id of the prologue or epilogue job, read where it runs: $OAR_JOB_ID on OAR, "
        "$SLURM_JOB_ID on Slurm (the task's own job id), $CIGRI_LOCAL_JOB_ID on a local cluster.",
    ),
    Macro(
        "{JDL_DIR}",
        "every text but name, params and cluster names",
        "The JDL file's folder (the current folder for gridsub -j), at submission.",
    ),
    Macro(
        "{1}, {2}, ..., {name}",
        "input_files and output_file",
        "The words of each job's param line ({1} is its name, which {name} also is).",
    ),
)


def expand_home(text: str, home: str) -> str:
    """``{HOME}``, ``$HOME`` and ``${HOME}`` anywhere, and a leading ``~`` or ``~/``, become ``home``."""
    text = _HOME.sub(lambda _: home, text)
    if text == "~" or text.startswith("~/"):
        text = home + text[1:]
    return text


def local_path(text: str) -> str:
    """A path of this machine, given in the JDL: the home is the submitter's."""
    return expand_home(text, os.path.expanduser("~"))


def with_campaign(text: str, campaign_id: int | str) -> str:
    """``{CAMPAIGN_ID}`` of an exec_file or exec_directory, expanded."""
    return text.replace("{CAMPAIGN_ID}", str(campaign_id))


def stage_script(lines: Sequence[str], campaign_id: int | str, job_id_variable: str) -> str:
    """A prologue or epilogue as its shell runs it on the cluster: ``{CAMPAIGN_ID}`` is the campaign's id,
    ``{HOME}`` is ``$HOME`` and ``{OAR_JOB_ID}`` the RM's variable holding the job's id, both expanded by the
    shell there; CiGri's escaped variables (``\\$HOME``) lose their backslash, as CiGri's OAR drivers took it."""
    script = _ESCAPED.sub(r"$\1", "\n".join(lines))
    script = with_campaign(script, campaign_id).replace("{HOME}", "$HOME")
    return script.replace("{OAR_JOB_ID}", f"${job_id_variable}")


def stage_argv(script: str) -> list[str]:
    """The command running a prologue or epilogue: bash where the cluster has it, else sh (:data:`STAGE_SHELL`),
    its lines one word each (a CRLF file's carriage returns dropped)."""
    lines = [line.removesuffix("\r") for line in script.split("\n")]
    return ["/bin/sh", "-c", STAGE_SHELL, "cigri-stage", *lines]
