"""Guards of admission and of secrets an audit found unpinned (each fails when its rule is removed or moved): a
limit is the most a user may have, and jobs_per_user counts only jobs not finished; a key naming a credential
holds a secret. scripts/mutations.py holds the mutations they catch."""

from __future__ import annotations

import pytest

from cigri import config, secrets
from cigri.errors import PermissionDenied
from cigri.model import JobState, RemoteState

from .test_placement import FakeRM, Grid


def test_a_campaign_that_brings_the_user_exactly_to_the_limit_is_admitted():
    grid = Grid(FakeRM("a", 2))
    config.set_value(grid.store, "admission.jobs_per_campaign", 3)
    config.set_value(grid.store, "admission.jobs_per_user", 5)
    grid.submit(3)
    with pytest.raises(PermissionDenied, match=r"refused by admission\.jobs_per_campaign \(3\): the campaign has 4"):
        grid.submit(4)
    grid.submit(2)  # 3 + 2 = 5 jobs: the limit, admitted
    with pytest.raises(PermissionDenied, match=r"refused by admission\.jobs_per_user \(5\): alice would have 6"):
        grid.submit(1)


def test_jobs_per_user_counts_the_jobs_not_finished():
    """alice's 4 jobs: 3 ended (done or failed), 1 running. A campaign of 4 more makes 5 not finished: admitted."""
    a = FakeRM("a", 4)
    grid = Grid(a)
    config.set_value(grid.store, "admission.jobs_per_user", 5)
    first = grid.submit(4)
    grid.at(0)
    for job_id in (1, 2, 3, 4):
        a.start(job_id, 1)
    a.end(1, 10)
    a.end(2, 10)
    a.end(3, 10, exit_code=3)
    grid.at(11)
    assert grid.states(first) == {JobState.TERMINATED: 2, JobState.EVENT: 1, JobState.RUNNING: 1}
    grid.submit(4)
    with pytest.raises(PermissionDenied, match=r"alice would have 6 jobs"):
        grid.submit(1)
    assert a.holds(RemoteState.RUNNING) == [4]


@pytest.mark.parametrize("name", ["credential", "CREDENTIALS", "db_credential", "aws.credentials", "MY-CREDENTIAL-ID"])
def test_a_credential_is_a_secret(name):
    assert secrets.is_secret(name)
    assert secrets.mask({name: "s3cr3t", "user": "alice"}) == {name: secrets.MASK, "user": "alice"}


def test_a_credential_file_holds_a_path_not_a_secret():
    assert not secrets.is_secret("credential_file")
    assert secrets.mask({"credential_file": "/home/alice/.creds"}) == {"credential_file": "/home/alice/.creds"}
