"""Resource-manager adapters: the only code that talks to clusters.

The contract every adapter implements (:class:`ResourceManager`):

- ``capacity()``: total / used slots, and how many of them and of the queue are cigri's.
- ``submit(batch_key, specs)``: submit a batch in one call; return the remote id of each spec, in order.
  The batch key makes it idempotent: submitting a key the RM already holds returns the same ids, so a
  pass killed between the RM's answer and cigri's commit never launches a job twice.
- ``find_batch(batch_key)``: the remote ids of a batch the RM holds, or None.
- ``states(remote_ids)``: every job's :class:`~cigri.model.RemoteStatus`, in one bulk query. A job the
  RM does not know is UNKNOWN, never assumed done.
- ``cancel(remote_ids)``: in bulk.
- ``hold(remote_ids)`` / ``release(remote_ids)``: in bulk, keep queued jobs from starting (a paused
  campaign's) and let them start again. Both are idempotent, and a job that is no longer queued (running,
  ended, unknown to the RM) is left as it is without an error: cigri asks again after a killed pass.
- ``tail(remote_id, stream, lines)``: the end of a job's stdout or stderr.
- ``check(settings, path)``: refuse (JdlError) a campaign setting the cluster cannot honour.
- ``validate(name, config)`` (optional classmethod): refuse (ConfigError) at ``gridclusters add/set`` a
  configuration the adapter can tell is unusable without reaching the cluster.
- ``activity()``: a value that changes when something may have happened on the cluster (lets a looping
  almighty wake early); adapters without a cheap signal return None.
- ``job_types`` (optional class attribute, False when absent): the RM takes the JDL's ``cluster_job_type``
  (OAR's ``-t`` types, in ``JobSpec.job_types``); a campaign giving one to a cluster without it is refused.

Every adapter is seen through :class:`~cigri.adapters.packing.Packs`, which answers the contract for the
jobs cigri packs several to an RM job (remote ids ``<RM job>+<job>+<size>``) from the adapter's RM jobs and
the files the packs write, for the adapters that offer the file access (local, slurm-ssh, slurm-rest).

Adapters map their own failures (subprocess, ssh, HTTP) to :class:`~cigri.errors.AdapterError`
subclasses once, at their edge.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..clock import Clock
from ..errors import ConfigError
from ..jdl import format_walltime
from ..macros import expand_home as expand_home  # the adapters' (and oar's) name for it
from ..model import Capacity, Cluster, JobSpec, RemoteStatus


@dataclass(frozen=True)
class AdapterContext:
    state_dir: Path
    clock: Clock


class ResourceManager(Protocol):
    name: str
    best_effort: bool  # does the cluster offer a preemptible mode

    def capacity(self) -> Capacity: ...

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]: ...

    def find_batch(self, batch_key: str) -> list[str] | None: ...

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]: ...

    def cancel(self, remote_ids: Sequence[str]) -> None: ...

    def hold(self, remote_ids: Sequence[str]) -> None: ...

    def release(self, remote_ids: Sequence[str]) -> None: ...

    def tail(self, remote_id: str, stream: str, lines: int) -> str: ...

    def details(self, remote_id: str) -> dict:
        """What the RM itself says of one job, read now: its own fields and values (gridstat -j JOB -C).
        AdapterError when it no longer knows the job."""
        ...

    def check(self, settings: dict, path: str) -> None: ...

    def activity(self) -> object: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Option:
    """A cluster setting accepted by ``gridclusters add/set`` for an adapter."""

    name: str
    type: type
    help: str
    default: object = None
    minimum: int | None = None
    choices: tuple[str, ...] = ()  # the values it may take, when they are a fixed few


def batch_environment(spec: JobSpec, workdir: str) -> dict[str, str]:
    """What every job of a batch gets: the JDL's ``environment`` map, then the CIGRI_* variables they share
    (which win), with the aliases of the 2009 design."""
    values = {
        "CIGRI_CAMPAIGN_ID": str(spec.campaign_id),
        "CIGRI_CAMPAIGNID": str(spec.campaign_id),
        "CIGRI_USER": spec.user,  # the campaign's owner, whatever login runs the job
        "CIGRI_WORKDIR": workdir,
        "CIGRI_WORKING_DIRECTORY": workdir,
        "CIGRI_RESOURCES": spec.resources,
        "CIGRI_WALLTIME": format_walltime(spec.walltime),
        "CIGRI_WALLTIME_SECONDS": str(spec.walltime),
        "CIGRI_RESUME": "1" if spec.resume else "0",  # 1: resume from your checkpoint
    }
    return {**spec.env, **values}


def job_environment(spec: JobSpec, workdir: str, nodefile: str) -> dict[str, str]:
    """A job's environment beyond its login's: :func:`batch_environment` and the job's own CIGRI_* variables."""
    return {
        **batch_environment(spec, workdir),
        "CIGRI_JOB_ID": str(spec.job_id),
        "CIGRI_JOBID": str(spec.job_id),
        "CIGRI_JOB_NAME": spec.name,
        "CIGRI_JOBNAME": spec.name,
        "CIGRI_NODE_FILE": nodefile,
        "CIGRI_NODEFILE": nodefile,
    }


def exports(environment: dict[str, str]) -> str:
    """Shell lines exporting ``environment``, every value quoted (nothing in it is expanded)."""
    return "\n".join(f"export {name}={shlex.quote(value)}" for name, value in environment.items())


# the variable holding the resource manager's id of the job it runs, for {OAR_JOB_ID} in prologues and epilogues
JOB_ID_VARIABLES = {
    "local": "CIGRI_LOCAL_JOB_ID",  # set by the local RM (cigri.adapters.local_rm)
    "slurm-ssh": "SLURM_JOB_ID",
    "slurm-rest": "SLURM_JOB_ID",
    "oar-ssh": "OAR_JOB_ID",
    "oar-rest": "OAR_JOB_ID",
}


def job_id_variable(adapter: str) -> str:
    """The variable {OAR_JOB_ID} stands for on a cluster of ``adapter``: CiGri's $OAR_JOB_ID for any other."""
    return JOB_ID_VARIABLES.get(adapter, "OAR_JOB_ID")


def registry() -> dict[str, type]:
    from .local import LocalAdapter
    from .oar_rest import OarRest
    from .oar_ssh import OarSsh
    from .slurm import SlurmSsh
    from .slurm_rest import SlurmRest

    return {
        "local": LocalAdapter,
        "slurm-ssh": SlurmSsh,
        "slurm-rest": SlurmRest,
        "oar-rest": OarRest,
        "oar-ssh": OarSsh,
    }


def adapter_class(name: str) -> type:
    adapters = registry()
    if name not in adapters:
        raise ConfigError(f"unknown adapter {name!r} (valid: {', '.join(sorted(adapters))})")
    return adapters[name]


def adapter_for(cluster: Cluster, context: AdapterContext) -> ResourceManager:
    """The cluster's adapter, seen with its packed jobs (:class:`~cigri.adapters.packing.Packs`)."""
    from .packing import Packs

    return Packs(adapter_class(cluster.adapter)(cluster, context))


def validate_config(adapter: str, given: dict) -> dict:
    """Check ``gridclusters add/set`` options against the adapter's declared options."""
    options = {o.name: o for o in adapter_class(adapter).options}
    out = {}
    for key, value in given.items():
        if key not in options:
            raise ConfigError(f"adapter {adapter!r} has no option {key!r} (valid: {', '.join(sorted(options))})")
        option = options[key]
        if option.type is int:
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{key} must be a whole number, not {value!r}") from None
            if option.minimum is not None and value < option.minimum:
                raise ConfigError(f"{key} must be at least {option.minimum}")
        if option.choices and str(value) not in option.choices:
            raise ConfigError(f"{key} must be one of {', '.join(option.choices)}, not {value!r}")
        if isinstance(value, str) and value.startswith("-"):
            # a host, login or path that ssh or an RM command would read as one of its options
            raise ConfigError(f"{key} must not begin with '-' ({value!r} would read as a command option)")
        out[key] = value
    return out


def validate_cluster(name: str, adapter: str, config: dict) -> None:
    """Checks of a whole cluster configuration before it is saved: a secret sent only where it is safe, then
    the adapter's own check (when it has one)."""
    from .http import check_secret_url  # http imports this module

    check_secret_url(name, adapter_class(adapter), config)
    validate = getattr(adapter_class(adapter), "validate", None)
    if validate is not None:
        validate(name, config)
