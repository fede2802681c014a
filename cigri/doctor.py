"""``grid doctor``: what a working setup needs, checked one item at a time, each finding saying what to fix.

The state file: it exists and passes ``grid admin check``'s invariants (:mod:`cigri.integrity`). Then, for each
cluster, in this order (a cluster whose credentials are wrong is not asked more):

- credentials: the ssh ``identity_file`` exists and is private (0600: ssh ignores a key others may read), a
  ``token_file`` holds a token, private, and a JWT's ``exp`` claim has not passed (read without the key);
  an ``oar-rest`` certificate's ``cert_file``/``key_file``/``ca_file`` exist;
- reachability: the adapter answers a capacity request, as a pass would ask it;
- the resource manager's version: ``sinfo --version`` (slurm-ssh), slurmrestd's ping (slurm-rest, its
  OpenAPI version and Slurm's release), ``oarstat --version`` (oar-ssh), OAR's API's ``GET version``
  (oar-rest);
- the cluster user's home and the folders cigri writes there: the home (``home`` option or ``$HOME``) is a
  folder the user can write, ``remote_dir`` (default ``~/.cigri``; created on first use, so its parent
  must be writable when it is missing) and slurm-rest's ``output_dir`` (slurmd does not create it) too.
  They are read through the cluster's commands (ssh, or this machine); slurm-rest without ``host`` and
  oar-rest have none, so theirs are not checked.

The state is opened read-only and the checks on a cluster only read and test; an adapter may refresh what it
keeps beside the state (slurm-rest's remembered API version, the local cluster's spool), as a pass would.
"""

from __future__ import annotations

import datetime
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import integrity
from .adapters import AdapterContext, adapter_for, expand_home
from .adapters.transport import LocalRunner, SshRunner, runner_for, shell
from .clock import Clock
from .errors import CigriError, PermissionDenied
from .model import Cluster
from .store import Store
from .wording import counted


@dataclass(frozen=True)
class Finding:
    subject: str  # "state" or "cluster NAME"
    check: str  # state, credentials, reachable, version, home
    ok: bool
    message: str  # what was found; when not ok, what to fix

    def __str__(self) -> str:
        return f"{'ok ' if self.ok else 'FIX'} {self.subject}: {self.check}: {self.message}"


def diagnose(state_path: Path, clock: Clock, trust_owner: str | None = None) -> list[Finding]:
    """Every finding, the state's first, then each cluster's. Another user's state is refused, not diagnosed:
    its clusters' commands are that user's programs (:mod:`cigri.owner`)."""
    if not state_path.exists():
        return [Finding("state", "state", False, f"{state_path} does not exist: submit a campaign or give --state")]
    try:
        store = Store(state_path, readonly=True, trust_owner=trust_owner)
    except PermissionDenied:
        raise
    except CigriError as exc:
        return [Finding("state", "state", False, f"{exc}: give the right --state, or restore the file")]
    try:
        findings = _state(store, state_path)
        context = AdapterContext(store.directory, clock)
        clusters = store.clusters()
        # each cluster's checks beside the others': unreachable clusters cost one timeout, not one each
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(clusters)))) as pool:
            for found in pool.map(lambda cluster: _cluster(cluster, context), clusters):
                findings += found
    finally:
        store.close()
    return findings


def _state(store: Store, path: Path) -> list[Finding]:
    problems = integrity.check(store)
    if not problems:
        return [Finding("state", "state", True, f"{path}: consistent")]
    return [Finding("state", "state", False, f"{p} (grid admin check lists them)") for p in problems]


def _cluster(cluster: Cluster, context: AdapterContext) -> list[Finding]:
    subject = f"cluster {cluster.name}"
    found = [Finding(subject, "credentials", False, problem) for problem in _credentials(cluster)]
    if found:
        return found
    if any(key in cluster.config for key in ("identity_file", "token_file", "cert_file")):
        found.append(Finding(subject, "credentials", True, "present and private"))
    adapter = None
    try:
        adapter = adapter_for(cluster, context)
        capacity = adapter.capacity()
    except CigriError as exc:
        return [*found, Finding(subject, "reachable", False, f"{exc}{_reach_hint(cluster)}")]
    finally:
        if adapter is not None:
            adapter.close()
    found.append(Finding(subject, "reachable", True, f"{counted(capacity.total, 'slot')}, {capacity.used} in use"))
    try:
        version = _version(cluster, context)
    except CigriError as exc:
        found.append(Finding(subject, "version", False, f"{exc}: is the resource manager installed there?"))
    else:
        if version:
            found.append(Finding(subject, "version", True, version))
    try:
        found += [Finding(subject, "home", ok, message) for ok, message in _home(cluster)]
    except CigriError as exc:
        found.append(Finding(subject, "home", False, f"{exc}{_reach_hint(cluster)}"))
    return found


def _private_file(key: str, value: str, name: str) -> str | None:
    """What is wrong with the file a ``*_file`` option names, or None."""
    path = Path(os.path.expanduser(value))
    option = "--" + key.replace("_", "-")
    try:
        mode = path.stat().st_mode
        with path.open("rb"):
            pass
    except FileNotFoundError:
        return f"{key} {path} does not exist: gridclusters set {name} {option} PATH"
    except OSError as exc:
        return f"{key} {path} cannot be read ({exc.strerror}): chmod 600 it, owned by the user running cigri"
    if not stat.S_ISREG(mode):
        return f"{key} {path} is not a file: gridclusters set {name} {option} PATH"
    if key != "ca_file" and mode & 0o077:
        return f"{key} {path} is readable by others (mode {stat.S_IMODE(mode):o}): chmod 600 {path}"
    return None


def _credentials(cluster: Cluster) -> list[str]:
    config = cluster.config
    problems = []
    for key in ("identity_file", "token_file", "cert_file", "key_file", "ca_file"):
        if config.get(key) and (problem := _private_file(key, str(config[key]), cluster.name)):
            problems.append(problem)
    if config.get("token_file") and not problems:
        problems += _token(cluster, str(config["token_file"]))
    return problems


def _token(cluster: Cluster, path: str) -> list[str]:
    from .adapters import oar_rest, slurm_rest

    read = slurm_rest.read_token if cluster.adapter == "slurm-rest" else oar_rest.read_token
    try:
        token = read(os.path.expanduser(path))
    except CigriError as exc:
        return [f"{exc}: write the token into it"]
    expiry = slurm_rest.token_expiry(token)
    if expiry is not None and expiry <= datetime.datetime.now(datetime.UTC).timestamp():
        when = datetime.datetime.fromtimestamp(expiry, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        renew = " (scontrol token lifespan=SECONDS on the cluster)" if cluster.adapter == "slurm-rest" else ""
        return [f"the token in {path} expired on {when}: write a new one into it{renew}"]
    return []


def _reach_hint(cluster: Cluster) -> str:
    config = cluster.config
    if config.get("host"):
        return f" (check the host, port and user: gridclusters set {cluster.name} --host H --port P --user U)"
    if config.get("url"):
        return f" (check the url: gridclusters set {cluster.name} --url URL)"
    return ""


def _runner(cluster: Cluster) -> LocalRunner | SshRunner | None:
    """How commands reach the cluster's user: ssh, this machine, or no way (REST without ``host``)."""
    config = cluster.config
    if cluster.adapter in ("slurm-ssh", "oar-ssh"):
        return runner_for(config)
    if cluster.adapter == "slurm-rest" and config.get("host"):
        return runner_for({**config, "user": config.get("ssh_user") or config.get("user")})
    if cluster.adapter == "local":
        return LocalRunner()
    return None


def _version(cluster: Cluster, context: AdapterContext) -> str:
    """The resource manager's own words on its version ("" when cigri cannot ask it)."""
    bin_dir = cluster.config.get("bin_dir")
    command = {"slurm-ssh": "sinfo", "oar-ssh": "oarstat"}.get(cluster.adapter)
    if command:
        argv = [f"{bin_dir.rstrip('/')}/{command}" if bin_dir else command, "--version"]
        result = runner_for(cluster.config).run(argv)
        if not result.ok:
            raise CigriError(result.describe())
        return " ".join(result.stdout.split())
    if cluster.adapter == "slurm-rest":
        return _slurmrestd_version(cluster)
    if cluster.adapter == "oar-rest":
        adapter = adapter_for(cluster, context)
        try:
            return adapter.server_version()
        finally:
            adapter.close()
    if cluster.adapter == "local":
        return "cigri's local processes"
    return ""


def _slurmrestd_version(cluster: Cluster) -> str:
    import httpx

    from .adapters import http, slurm_rest

    config = cluster.config
    url = str(config["url"]).rstrip("/")
    headers = {
        "X-SLURM-USER-NAME": str(config["user"]),
        "X-SLURM-USER-TOKEN": slurm_rest.read_token(os.path.expanduser(str(config["token_file"]))),
    }
    versions = [config["api"]] if config.get("api") else list(slurm_rest.VERSIONS)
    with http.client(url, 10.0, None, headers=headers) as client:
        for api in versions:
            try:
                response = client.get(f"/slurm/{api}/ping")
            except httpx.HTTPError as exc:
                raise CigriError(f"slurmrestd at {url}: {exc}") from None
            if response.status_code == 200:
                meta = response.json().get("meta", {})
                slurm = meta.get("Slurm") or meta.get("slurm") or {}
                return f"slurmrestd {api}, Slurm {slurm.get('release', 'of unknown release')}"
    raise CigriError(f"slurmrestd at {url} answers none of {', '.join(versions)}")


# one line per folder: "<label> ok|creatable|missing|notdir|notwritable"
_FOLDERS = r"""
for spec in "$@"; do
  label=${spec%%=*}; dir=${spec#*=}
  if [ -d "$dir" ]; then
    if [ -w "$dir" ] && [ -x "$dir" ]; then echo "$label ok"; else echo "$label notwritable"; fi
  elif [ -e "$dir" ]; then echo "$label notdir"
  elif [ -w "$(dirname "$dir")" ]; then echo "$label creatable"
  else echo "$label missing"; fi
done
"""

_FIXES = {
    "notwritable": "is not writable by {user}: chmod u+rwx {path} as {user}",
    "notdir": "is not a folder: move it away, or choose another with gridclusters set {name} --{option} PATH",
    "missing": "does not exist and {user} cannot create it: mkdir -p {path} as {user}, "
    "or gridclusters set {name} --{option} PATH",
}


def _home(cluster: Cluster) -> list[tuple[bool, str]]:
    """(ok, message) for the home and each folder cigri writes on the cluster."""
    runner = _runner(cluster)
    if runner is None:
        return [(True, f"not checked: {cluster.adapter} without host has no commands on the cluster")]
    ask = runner.run([*shell('id -un; printf %s "$HOME"')])
    if not ask.ok:
        raise CigriError(f"cannot read the home directory: {ask.describe()}")
    user, _, login_home = ask.stdout.partition("\n")
    config = cluster.config
    home = expand_home(str(config.get("home") or login_home), login_home)
    folders = {"home": home}
    if cluster.adapter in ("slurm-ssh", "oar-ssh"):
        folders["remote-dir"] = expand_home(str(config.get("remote_dir") or "~/.cigri"), home)
    if config.get("output_dir"):
        folders["output-dir"] = expand_home(str(config["output_dir"]), home)
    answer = runner.run([*shell(_FOLDERS), "sh", *(f"{label}={path}" for label, path in folders.items())])
    states = dict(line.split(" ", 1) for line in answer.stdout.splitlines() if " " in line)
    out = []
    for label, path in folders.items():
        state = states.get(label, "missing")
        what = f"{label.replace('-', '_')} {path} of {user}"
        if state in ("ok", "creatable"):
            out.append((True, f"{what}: writable" if state == "ok" else f"{what}: will be created"))
        else:
            fix = _FIXES[state].format(user=user, path=path, name=cluster.name, option=label)
            if label == "home" and config.get("home"):
                fix += f", or give the user's own: gridclusters set {cluster.name} --home PATH"
            out.append((False, f"{what} {fix}"))
    return out
