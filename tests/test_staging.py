"""Input files staged into the local cluster's cache, outputs gathered back, copies deleted once no job needs
them (issue 13 items 1, 2, 5), end to end through gridsub and almighty."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cigri import staging
from cigri.adapters.files import LocalFiles
from cigri.loop import unfinished
from cigri.model import CampaignState, EventClass, EventCode, JobState
from cigri.store import Store

from .conftest import write_jdl

READER = """#!/bin/sh
# reads its input file and the shared one from CIGRI_INPUT_DIR, writes their checksums as its output
name=$1; chunk=$2
cat "$CIGRI_INPUT_DIR/chunk_$chunk.dat" "$CIGRI_INPUT_DIR/common.dat" | sha256sum | cut -d' ' -f1 > "out_$name.txt"
"""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    for i in range(3):
        (folder / f"chunk_{i}.dat").write_bytes(bytes([i]) * (1000 + i))
    (folder / "common.dat").write_bytes(b"shared\n" * 100)
    return folder


@pytest.fixture
def reader(tmp_path: Path) -> Path:
    script = tmp_path / "reader.sh"
    script.write_text(READER)
    script.chmod(0o755)
    return script


def reading(tmp_path: Path, data: Path, reader: Path) -> Path:
    """Four jobs reading their chunk and common.dat, writing out_<name>.txt, gathered to results/."""
    return write_jdl(
        tmp_path,
        exec_file=str(reader),
        params=["a 0", "b 1", "c 2", "d 0"],
        data_source=str(data),
        input_files=["chunk_{2}.dat", "common.dat"],
        output_file="out_{1}.txt",
        output_destination=str(tmp_path / "results"),
    )


def test_jobs_read_staged_files_outputs_come_back_and_the_cache_is_emptied(cli, tmp_path, data, reader):
    cache = tmp_path / "cache"
    cli("gridclusters", "set", "local", "--cache-dir", str(cache))
    jdl = reading(tmp_path, data, reader)
    cid = cli.submit(jdl)
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["done"] == 4
    for name, chunk in (("a", 0), ("b", 1), ("c", 2), ("d", 0)):
        both = (data / f"chunk_{chunk}.dat").read_bytes() + (data / "common.dat").read_bytes()
        gathered = tmp_path / "results" / name / f"out_{name}.txt"
        assert gathered.read_text().strip() == hashlib.sha256(both).hexdigest()
    assert [p for p in cache.rglob("*") if p.is_file()] == []  # no job needs them any more: deleted


def test_a_missing_input_file_refuses_the_campaign_and_writes_nothing(cli, tmp_path, data, reader):
    jdl = write_jdl(
        tmp_path, exec_file=str(reader), params=["a 0", "b 7"], data_source=str(data), input_files="chunk_{2}.dat"
    )
    out = cli("gridsub", str(jdl), code=3)
    assert "input_files: chunk_7.dat (job b): no such file in data_source" in out
    assert cli.json("gridstat") == []


def test_a_cache_quota_sends_the_jobs_whose_files_fit_and_evicts_unused_copies(cli, tmp_path, data, reader):
    """Each chunk is about 1 kB and common.dat 700 B: a 2 kB cache holds common.dat and one chunk, so jobs go
    chunk by chunk, the previous chunk evicted, and every job still runs."""
    cache = tmp_path / "cache"
    cli("gridclusters", "set", "local", "--cache-dir", str(cache), "--cache-quota", "2000")
    jdl = reading(tmp_path, data, reader)
    cid = cli.submit(jdl)
    log = cli("almighty", "--until-done", "--period", "0.5", "--timeout", "60", "-v")
    assert cli.json("gridstat", "-c", str(cid))["done"] == 4
    assert "cache quota is full" in log or "cache quota" in log
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["a", "b", "c", "d"]
    assert [p for p in cache.rglob("*") if p.is_file()] == []


def test_a_job_whose_files_exceed_the_cache_quota_is_an_event_not_an_endless_wait(cli, tmp_path, data, reader):
    """A job needing more bytes than a cluster's whole cache quota can never run there: a SUBMIT_ERROR
    event says so and keeps the campaign off that cluster (the other clusters run it), rather than the
    batch going back to the bag every pass. Each job here needs about 1.7 kB."""
    cli("gridclusters", "set", "local", "--cache-dir", str(tmp_path / "cache"), "--cache-quota", "1500")
    cid = cli.submit(reading(tmp_path, data, reader))
    out = cli("almighty", "--until-done", "--period", "0.5", "--timeout", "60", code=13)
    assert f"campaign {cid} is blocked: 1 open event(s)" in out
    [event] = cli.json("gridevents", "-c", str(cid))
    assert (event["code"], event["cluster"]) == ("SUBMIT_ERROR", "local")
    assert "cache quota (1500 bytes) is smaller than the 1700 bytes job 1 needs" in event["message"]
    assert cli.json("gridstat", "-c", str(cid))["done"] == 0


def test_output_a_job_did_not_write_is_an_event_of_that_job(cli, tmp_path, job_script):
    cid = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(job_script),
            params=["a ok"],
            output_file="never_{1}.txt",
            output_destination=str(tmp_path / "results"),
        )
    )
    out = cli.until_done(code=13)  # a campaign is over once its outputs are where the user asked
    assert f"campaign {cid} is blocked: 1 open event(s)" in out
    events = cli.json("gridevents", "-c", str(cid))
    assert [(e["code"], e["job_id"]) for e in events] == [("OUTPUT_ERROR", 1)]
    assert "never_a.txt of job a: not found in its exec_directory" in events[0]["message"]
    assert cli.json("gridstat", "-c", str(cid))["state"] == "in_treatment"
    cli("gridevents", "-c", str(cid), "-f")  # the user accepts the loss: the campaign ends
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"


def test_a_cluster_that_cannot_stage_is_closed_and_the_others_run_the_campaign(cli, tmp_path, data, reader):
    (tmp_path / "a-file").write_text("not a folder")
    cli("gridclusters", "set", "local", "--cache-dir", str(tmp_path / "a-file" / "cache"))
    cli("gridclusters", "add", "annex", "--adapter", "local", "--slots", "1", "--idle-exit", "2")
    cli("gridclusters", "set", "annex", "--cache-dir", str(tmp_path / "cache"))
    cid = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(reader),
            params=["a 0", "b 1"],
            data_source=str(data),
            input_files=["chunk_{2}.dat", "common.dat"],
            clusters={"local": {}, "annex": {}},
        )
    )
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["done"] == 2
    assert {j["cluster"] for j in cli.json("gridstat", "-c", str(cid), "-f")} == {"annex"}
    events = cli.json("gridevents", "--all")
    assert any(
        e["code"] == "CLUSTER_UNREACHABLE" and e["cluster"] == "local" and "cannot stage" in e["message"]
        for e in events
    )


def test_a_cluster_without_a_file_path_is_not_used_by_file_campaigns(cli, state, tmp_path, data):
    rest = ["--url", "http://127.0.0.1:6820", "--user", "u", "--token-file", str(state.parent / "token")]
    cli("gridclusters", "add", "rest", "--adapter", "slurm-rest", *rest, "--home", "/home/u")
    files = {"data_source": str(data), "input_files": "chunk_{2}.dat"}
    only_rest = write_jdl(tmp_path, exec_file="x", params=["a 0"], clusters={"rest": {}}, **files)
    out = cli("gridsub", str(only_rest), code=3)
    assert out.strip().endswith(
        "clusters.rest: this cluster's adapter has no file path (REST without ssh): it cannot stage input_files nor "
        "gather outputs"
    )
    both = write_jdl(tmp_path, exec_file="x", params=["a 0"], clusters={"rest": {}, "local": {}}, **files)
    cid = cli.submit(both)
    events = cli.json("gridevents", "-c", str(cid))
    assert [(e["code"], e["cluster"]) for e in events] == [("SUBMIT_ERROR", "rest")]  # kept off rest only


def test_a_file_changed_since_submission_pauses_the_campaign_until_fixed(cli, tmp_path, data, reader):
    cache = tmp_path / "cache"
    cli("gridclusters", "set", "local", "--cache-dir", str(cache))
    jdl = write_jdl(tmp_path, exec_file=str(reader), params=["a 0"], data_source=str(data), input_files="chunk_{2}.dat")
    cid = cli.submit(jdl)
    original = (data / "chunk_0.dat").read_bytes()
    (data / "chunk_0.dat").write_bytes(b"changed")
    cli("almighty")
    assert cli.json("gridstat", "-c", str(cid))["state"] == "paused"
    assert [j["state"] for j in cli.json("gridstat", "-c", str(cid), "-f")] == ["to_launch"]
    events = cli.json("gridevents", "--all")
    assert [e["code"] for e in events] == ["INPUT_CHANGED"]  # the campaign's trouble, not the cluster's
    assert "chunk_0.dat is changed since the campaign was submitted" in events[0]["message"]
    assert not cache.exists()  # nothing sent
    (data / "chunk_0.dat").write_bytes(original)
    cli("gridevents", "-c", str(cid), "-f")
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["done"] == 1


def test_a_copy_damaged_on_the_way_is_removed_and_closes_that_cluster(cli, tmp_path, data, reader, monkeypatch):
    cache = tmp_path / "cache"
    cli("gridclusters", "set", "local", "--cache-dir", str(cache))
    sent = LocalFiles.put_file
    monkeypatch.setattr(LocalFiles, "put_file", lambda self, *args: sent(self, *args)[::-1])  # a wrong checksum
    jdl = write_jdl(tmp_path, exec_file=str(reader), params=["a 0"], data_source=str(data), input_files="chunk_{2}.dat")
    cid = cli.submit(jdl)
    cli("almighty")
    assert [j["state"] for j in cli.json("gridstat", "-c", str(cid), "-f")] == ["to_launch"]
    events = cli.json("gridevents", "--all")
    assert [(e["code"], e["cluster"]) for e in events] == [("CLUSTER_UNREACHABLE", "local")]
    assert "chunk_0.dat arrived damaged" in events[0]["message"]
    assert [p for p in cache.rglob("*") if p.is_file()] == []


def test_a_dry_run_checks_the_input_files_and_says_their_size(cli, tmp_path, data, reader):
    out = cli("gridsub", "--dry-run", str(reading(tmp_path, data, reader)))
    assert f"input files: 4 (3703 bytes) from {data}" in out  # chunks 0-2 (1000, 1001, 1002) and common (700)
    (data / "chunk_2.dat").unlink()
    out = cli("gridsub", "--dry-run", str(reading(tmp_path, data, reader)), code=3)
    assert "input_files: chunk_2.dat (job c): no such file in data_source" in out


def test_jobs_added_to_a_campaign_read_their_files_too(cli, state, tmp_path, data, reader):
    cid = cli.submit(
        write_jdl(tmp_path, exec_file=str(reader), params=["a 0"], data_source=str(data), input_files="chunk_{2}.dat")
    )
    cli("gridsub", "-c", str(cid), "-J", '["b 1", "c 2"]')
    out = cli("gridsub", "-c", str(cid), "-J", '["d 9"]', code=3)
    assert "input_files: chunk_9.dat (job d): no such file in data_source" in out
    store = Store(state)
    try:
        assert [keys for _, keys in store.waiting_job_files(cid)] == [
            ("chunk_0.dat",),
            ("chunk_1.dat",),
            ("chunk_2.dat",),
        ]
    finally:
        store.close()


def test_until_done_waits_for_outputs_still_due_and_names_the_cluster_holding_them(cli, store, cycle, tmp_path):
    """A campaign whose jobs all ended is over for the scheduler, but not for its user while outputs wait
    to come back: --until-done goes on while they can be gathered, and says where they wait when that
    cluster does not answer."""
    jdl = write_jdl(
        tmp_path, exec_file="x", params=["a", "b"], output_file="out_{1}.txt", output_destination=str(tmp_path / "r")
    )
    cid = cli.submit(jdl)
    with store.transaction():  # both jobs ended on local; gather has not run yet
        store.conn.execute("UPDATE jobs SET cluster = 'local'")
        store.mark_ended([(job.id, JobState.TERMINATED, 0, 1.0, 2.0) for job in store.jobs(cid)])
        store.set_campaign_state(cid, CampaignState.TERMINATED, 10.0)
    going, blocked = unfinished(cycle)
    assert going and blocked == []
    with store.transaction():
        store.open_event(EventClass.CLUSTER, EventCode.CLUSTER_UNREACHABLE, "ssh: timeout", 20.0, cluster="local")
    assert unfinished(cycle) == ([], [(cid, "outputs of 2 jobs wait on cluster local, which does not answer")])


def test_until_done_ends_with_every_output_gathered(cli, tmp_path, data, reader, monkeypatch):
    monkeypatch.setattr(staging, "GATHER_BATCH", 1)  # one job's outputs a pass: the campaign ends first
    cli("gridclusters", "set", "local", "--slots", "4")
    cid = cli.submit(reading(tmp_path, data, reader))
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["done"] == 4
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["a", "b", "c", "d"]
