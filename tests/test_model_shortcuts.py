"""The shortcuts that build the hot frozen dataclasses without their generated ``__init__`` build the same
objects (equal, same hash, same fields in the same order)."""

from __future__ import annotations

from dataclasses import fields, replace

from cigri.model import JobSpec, KillCause, RemoteState, RemoteStatus


def test_a_job_spec_for_a_job_is_the_batch_spec_replaced():
    base = JobSpec(0, 7, "", ("run.sh",), "~/work", 600, slots=2, env={"A": "1"}, job_types=("besteffort",))
    spec = base.for_job(42, "j42", ("run.sh", "1", "2"), ("in/a",))
    expected = replace(base, job_id=42, name="j42", argv=("run.sh", "1", "2"), inputs=("in/a",))
    assert spec == expected and repr(spec) == repr(expected)
    assert list(vars(spec)) == [f.name for f in fields(JobSpec)]
    assert base.job_id == 0 and base.inputs == ()  # the batch's spec is left as it was


def test_a_remote_status_of_its_values_is_the_one_its_constructor_makes():
    for args in [
        ("12", RemoteState.RUNNING, None, 3.0, None, "", None),
        ("13", RemoteState.KILLED, None, 3.0, 9.5, "walltime", KillCause.WALLTIME),
    ]:
        made = RemoteStatus(*args[:6], cause=args[6])
        quick = RemoteStatus.of(*args)
        assert quick == made and hash(quick) == hash(made) and repr(quick) == repr(made)
        assert list(vars(quick)) == [f.name for f in fields(RemoteStatus)]
