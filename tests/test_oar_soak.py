"""Crash soak on the real OAR 2.5.9 of scripts/oar-local.sh: ``grid almighty --loop`` SIGKILLed a hundred times
at random points while a campaign runs, through oar-ssh and through oar-rest. OAR's own records (its jobs
table, read with ``oarstat --sql``) must show each job of the campaign started exactly once and run to its
end (a job cigri took back while it waited, for flooding, ends in Error without having started), and
``grid admin check`` must find the state consistent. The kill delays are seeded as in tests/test_soak.py."""

from __future__ import annotations

import random
import shlex
import time
from collections import Counter

import pytest

from cigri.store import Store

from .conftest import write_jdl
from .oar_local import rest_options, ssh_options, user_jobs
from .test_oar_real import job_script
from .test_soak import KILLS, kill_loop, seed

pytestmark = pytest.mark.oar

JOBS = 60  # of 2 s each; the cluster's queue_depth 2: each pass that gets to submit adds a few jobs only, so the
# campaign runs while the kills go on (OAR alone drains 24 such jobs in about 15 s here)
QUEUE_DEPTH = "2"
# Seconds from the almighty's start to its SIGKILL. A grid process starts its first pass 0.3 s after its start;
# a whole `grid almighty` on this OAR takes 2.7 to 3.4 s through ssh (oarnodes, oarstat, oarsub: Perl over
# ssh) and 1.8 to 2.6 s through the API: the kills cover the start, the collection, the submission, and for
# some the passes after it.
OAR_DELAY = {"oar-ssh": (0.3, 3.2), "oar-rest": (0.3, 2.4)}


def job_name(command: str) -> str:
    """The cigri job's name in an OAR job's command: the word after its id, after the wrapper (see
    cigri.adapters.oar.param_line), the exec_file's first argument."""
    words = shlex.split(command)
    return words[words.index("cigri-job") + 3]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("adapter_name", ["oar-ssh", "oar-rest"])
def test_oar_survives_a_hundred_kills_of_a_looping_almighty(cli, state, real_oar, oar_dir, adapter_name):
    options = ssh_options(real_oar, oar_dir / ".cigri") if adapter_name == "oar-ssh" else rest_options(real_oar)
    cli("gridclusters", "add", "oar", "--adapter", adapter_name, *options, "--queue-depth", QUEUE_DEPTH)
    job_script(oar_dir)
    names = [f"k{i:03d}" for i in range(JOBS)]
    jdl = write_jdl(
        oar_dir,
        exec_file=str(oar_dir / "job.sh"),
        exec_directory=str(oar_dir),
        params=[f"{name} sleep:2" for name in names],
        clusters={"oar": {}},
    )
    cid = cli.submit(jdl)
    store = Store(state)
    prefix = f"cigri.{store.instance}."
    store.close()
    figures = kill_loop(state, random.Random(seed()), KILLS, OAR_DELAY[adapter_name])
    done_under_kills = cli.json("gridstat", "-c", str(cid))["done"]
    drain = time.monotonic()
    cli.until_done(timeout=300)
    drain = time.monotonic() - drain
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", JOBS, JOBS), row
    records = user_jobs(real_oar, prefix).values()  # every OAR job of this state, whatever its state
    started = [job for job in records if job["startTime"]]  # a job nikita took back while it waited never ran
    ran = Counter(job_name(job["command"]) for job in started)
    assert {name: n for name, n in ran.items() if n != 1} == {}, "jobs run more than once"
    assert sorted(ran) == names, "jobs never run"
    assert {job["state"] for job in started} == {"Terminated"}
    assert {job["state"] for job in records if not job["startTime"]} <= {"Error"}
    assert all((oar_dir / f"{name}.words").exists() for name in names)
    assert cli("admin", "check") == ""
    print(
        f"oar soak ({adapter_name}): {JOBS} jobs, {figures.kills} kills in {figures.seconds:.0f} s "
        f"({figures.acted} after the almighty acted), {done_under_kills} jobs done by then, the rest in {drain:.0f} s"
    )
