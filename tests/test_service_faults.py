"""``grid serve``'s faults (issue 25, item 5): the service killed with SIGKILL in the middle of a big submission
leaves no partial campaign; a client's bad JSON is a 400 with one line and writes nothing; a user acting on
another's campaign through the API is refused (403) and changes nothing. Real ``grid serve`` subprocesses, as
in test_service.py."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import httpx
import pytest

from cigri.clock import RealClock
from cigri.model import EventClass, EventCode
from cigri.store import Store

from .conftest import Grid, require_root, wait_for
from .second_user import requests_as_nobody
from .test_service import ROOT_HEADER, jdl, one_line_error, serving, snapshot, socket_folder

BIG = 200_000  # jobs of the submission killed half-way: long enough a transaction to be caught in


def wal_size(state: Path) -> int:
    wal = state.with_name(state.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_a_service_killed_mid_submit_leaves_no_partial_campaign(state, tmp_path, job_script):
    """SIGKILL once the submission's transaction is writing (its pages spill into the -wal file): after a
    restart there is no campaign, or (had it committed first) a whole one, and the state is consistent."""
    body = json.dumps(jdl(job_script, tmp_path, params=[f"j{i} ok" for i in range(BIG)])).encode()
    answers: list[object] = []
    with serving(state, tmp_path) as served:
        start = wal_size(state)

        def post() -> None:
            with served.client(headers=ROOT_HEADER) as client:
                try:
                    answers.append(client.post("/campaigns", content=body))
                except httpx.TransportError as exc:
                    answers.append(exc)

        poster = threading.Thread(target=post)
        poster.start()
        try:
            wait_for(lambda: wal_size(state) > start + 2**20 or answers, timeout=25, interval=0.005)
            served.process.send_signal(signal.SIGKILL)
            served.process.wait()
        finally:
            poster.join(30)
    assert answers, "the POST never ended"
    killed_first = isinstance(answers[0], httpx.TransportError)
    with serving(state, tmp_path) as restarted, restarted.client(headers=ROOT_HEADER) as client:
        listed = client.get("/campaigns", params={"all": 1}).json()["items"]
        if killed_first:
            assert listed == []
        else:  # committed before the kill: then it is whole
            assert [(c["total_jobs"], c["waiting_jobs"]) for c in listed] == [(BIG, BIG)]
        # the service takes submissions again
        again = client.post("/campaigns", json=jdl(job_script, tmp_path))
        assert again.status_code == 201, again.text
        assert again.json()["total_jobs"] == 5
    assert Grid(state)("admin", "check") == ""
    assert killed_first, "the POST answered before the kill: the transaction was not caught half-way"


NESTED = b'{"name": "deep", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
BAD_JDLS = {
    "truncated": b'{"name": "x", "params": ["a 1", "b',
    "truncated after a key": b'{"name": "x", "clusters": {"local": ',
    "not UTF-8": b'{"name": "\xff\xfe", "clusters": {"local": {}}}',
    "nested 100,000 deep": NESTED,
    "a list": b"[" * 50_000 + b"]" * 50_000,
    "null": b"null",
    "a number": b"12",
    "empty": b"",
}


def wrong_types(job_script: Path, workdir: Path) -> dict[str, dict]:
    """What the JDL refuses, as gridsub does (it takes a number where a text is due: YAML's ``name: 5``)."""
    base = jdl(job_script, workdir)
    return {
        "name a list": {**base, "name": ["a"]},
        "params a string": {**base, "params": "a ok"},
        "params of objects": {**base, "params": [{"a": 1}]},
        "clusters a list": {**base, "clusters": ["local"]},
        "clusters a string": {**base, "clusters": "local"},
        "walltime a list": {**base, "walltime": [1]},
        "walltime huge": {**base, "walltime": 1e308},
        "exec_file null": {**base, "exec_file": None},
        "a cluster's settings a number": {**base, "clusters": {"local": 3}},
    }


def test_bad_json_is_a_400_with_one_line_and_writes_nothing(server, state, tmp_path, job_script):
    """Truncated bodies, wrong types and deep nesting, on every route taking JSON: 400, one line, nothing
    written (a deep nesting used to escape as a 500 where the body is read as plain JSON)."""
    with server.client(headers=ROOT_HEADER) as client:
        cid = client.post("/campaigns", json=jdl(job_script, tmp_path)).json()["id"]
        before = snapshot(state)
        for what, body in BAD_JDLS.items():
            message = one_line_error(client.post("/campaigns", content=body), 400)
            assert len(message) < 300, (what, message)
        for what, fields in wrong_types(job_script, tmp_path).items():
            message = one_line_error(client.post("/campaigns", content=json.dumps(fields)), 400)
            assert len(message) < 300, (what, message)
        for method, path in (
            ("PUT", f"/campaigns/{cid}"),
            ("POST", f"/campaigns/{cid}/jobs"),
            ("POST", "/notifications/mail"),
        ):
            for what, body in BAD_JDLS.items():
                if what == "empty" and method == "PUT":
                    continue  # PUT takes its fields from the query when the body is empty
                answer = client.request(method, path, content=body)
                message = one_line_error(answer, 400)
                assert len(message) < 300, (method, path, what, message)
        for fields in ({"name": 5}, {"state": ["paused"]}, {"name": {"a": 1}}, {"state": None}):
            one_line_error(client.put(f"/campaigns/{cid}", json=fields), 400)
        for lines in ([1], [None], "a ok", [["a"]], []):
            one_line_error(client.post(f"/campaigns/{cid}/jobs", json=lines), 400)
        for given in ({"identity": 5}, {"identity": "a@b.c", "severity": 3}, ["a@b.c"]):
            one_line_error(client.post("/notifications/mail", json=given), 400)
        assert client.get("/").status_code == 200  # the service is still there
    assert snapshot(state) == before


# -- a real second user over the Unix socket


def test_a_user_acting_on_anothers_campaign_is_refused_and_nothing_changes(state, tmp_path, job_script):
    """nobody, named by the kernel on the socket, tries every change of root's campaign, its jobs and its
    events, and their private reads: 403 each, and the state is as it was."""
    require_root("a second user's rights")
    with socket_folder() as folder:
        sock = folder / "cigri.sock"
        with serving(state, tmp_path, f"unix:{sock}") as served:
            with served.client() as client:
                cid = client.post("/campaigns", json=jdl(job_script, tmp_path)).json()["id"]
                job = client.get(f"/campaigns/{cid}/jobs").json()["items"][0]["id"]
            store = Store(state)
            try:
                with store.transaction():
                    event = store.open_event(
                        EventClass.JOB, EventCode.EXIT_ERROR, "boom", RealClock().now(), campaign_id=cid, job_id=job
                    )
            finally:
                store.close()
            before = snapshot(state)
            changes = [
                ("PUT", f"/campaigns/{cid}", json.dumps({"name": "mine"}).encode()),
                ("PUT", f"/campaigns/{cid}", json.dumps({"state": "paused"}).encode()),
                ("PUT", f"/campaigns/{cid}?name=mine", None),
                ("DELETE", f"/campaigns/{cid}", None),
                ("DELETE", f"/campaigns/{cid}?hold", None),
                ("DELETE", f"/campaigns/{cid}?purge", None),
                ("POST", f"/campaigns/{cid}/jobs", json.dumps(["z 9"]).encode()),
                ("DELETE", f"/campaigns/{cid}/events", None),
                ("DELETE", f"/campaigns/{cid}/events?resubmit", None),
                ("DELETE", f"/events/{event}", None),
                ("DELETE", f"/events/{event}?resubmit", None),
                ("DELETE", f"/jobs/{job}", None),
                ("GET", f"/jobs/{job}", None),
                ("GET", f"/jobs/{job}/stdout", None),
                ("GET", f"/campaigns/{cid}/jobs/{job}", None),
                ("GET", f"/campaigns/{cid}/jdl", None),
            ]
            answers = requests_as_nobody(sock, [(method, path, {"content": body}) for method, path, body in changes])
            after = snapshot(state)
    for (method, path, _), (status, body) in zip(changes, answers, strict=True):
        assert status == 403, (method, path, status, body)
        assert "\n" not in body["message"] and "nobody" in body["message"], (method, path, body)
    assert after == before


@pytest.fixture
def server(state, tmp_path):
    with serving(state, tmp_path) as served:
        yield served
