"""``grid serve`` (issue 25, items 1 and 2): CiGri's REST API over the state the cycle uses, run for real as a
subprocess on 127.0.0.1 (and on a Unix socket), spoken to with httpx. Identity comes from the trusted proxy's
header, only from the trusted addresses, or from the socket's peer credentials; owner checks are the
commands'; a refused request writes nothing."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from cigri.cli import grid

from .conftest import PYTHON, Grid, require_root
from .second_user import requests_as_nobody

ROOT_HEADER = {"X-CIGRI-USER": "root"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Served:
    """A ``grid serve`` subprocess; ``client()`` talks to it (over TCP from ``source``, or over its socket)."""

    def __init__(self, state: Path, logs: Path, listen: str, *extra: str):
        self.listen = listen
        self.log = logs / f"serve-{listen.replace('/', '_')}.log"
        self.out = open(self.log, "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [PYTHON, "-m", "cigri", "--state", str(state), "serve", "--listen", listen, *extra],
            stdout=self.out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def client(self, source: str | None = None, headers: dict | None = None) -> httpx.Client:
        if self.listen.startswith("unix:"):
            transport = httpx.HTTPTransport(uds=self.listen[5:])
            return httpx.Client(transport=transport, base_url="http://cigri", headers=headers, timeout=30)
        transport = httpx.HTTPTransport(local_address=source) if source else httpx.HTTPTransport()
        return httpx.Client(transport=transport, base_url=f"http://{self.listen}", headers=headers, timeout=30)

    def wait_ready(self, deadline: float = 30.0) -> None:
        """Connect until it answers (no sleep-and-hope): fail at the deadline or when the process died. A plain
        socket probes first: httpx leaves the socket of a refused Unix connection open."""
        end = time.monotonic() + deadline
        while not self._accepts():
            if self.process.poll() is not None:
                raise AssertionError(f"grid serve exited {self.process.returncode}: {self.log.read_text()}")
            if time.monotonic() > end:
                raise AssertionError(f"grid serve did not answer within {deadline} s: {self.log.read_text()}")
            time.sleep(0.05)
        with self.client() as client:
            assert client.get("/").status_code == 200

    def _accepts(self) -> bool:
        if self.listen.startswith("unix:"):
            family, address = socket.AF_UNIX, self.listen[5:]
        else:
            host, _, port = self.listen.rpartition(":")
            family, address = socket.AF_INET, (host, int(port))
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(address)
            except OSError:
                return False
        return True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.out.close()


@contextlib.contextmanager
def serving(state: Path, logs: Path, listen: str | None = None, *extra: str):
    served = Served(state, logs, listen or f"127.0.0.1:{free_port()}", *extra)
    try:
        served.wait_ready()
        yield served
    finally:
        served.stop()


@pytest.fixture
def server(state, tmp_path):
    with serving(state, tmp_path) as served:
        yield served


def snapshot(state: Path) -> str:
    """Every row a request could change."""
    conn = sqlite3.connect(state)
    try:
        return "\n".join(
            str(row)
            for table in ("campaigns", "campaign_clusters", "jobs", "events", "subscriptions")
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1")
        )
    finally:
        conn.close()


def jdl(job_script: Path, workdir: Path, **fields) -> dict:
    return {
        "name": "api",
        "exec_file": str(job_script),
        "exec_directory": str(workdir),
        "walltime": "00:01:00",
        "clusters": {"local": {}},
        "params": ["a ok", "b ok", "c ok", "d ok", "e fail"],
        **fields,
    }


def one_line_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert "\n" not in body["message"] and body["message"], body
    assert body["links"], body
    return body["message"]


def test_root_answers_links_allow_and_pretty(server):
    with server.client() as client:
        answer = client.get("/")
        assert answer.status_code == 200
        assert answer.headers["allow"] == "GET"
        rels = {link["href"] for link in answer.json()["links"]}
        assert {"/", "/campaigns", "/clusters", "/gridusage"} <= rels
        assert "\n  " not in answer.text
        assert "\n  " in client.get("/?pretty").text
        assert "\n  " in client.get("/?pretty=yes").text
        assert "\n  " not in client.get("/?pretty=false").text
        assert client.get("/campaigns/").json()["links"][0] == {"rel": "self", "href": "/campaigns"}


def test_a_real_campaign_runs_through_the_api(server, state, tmp_path, job_script):
    """POST /campaigns, the almighty on the same state, then the campaign, its jobs page by page, a job's
    stdout, its events and their fix, as CiGri's API serves them."""
    with server.client(headers=ROOT_HEADER) as client, server.client() as anonymous:
        posted = client.post("/campaigns", json=jdl(job_script, tmp_path))
        assert posted.status_code == 201, posted.text
        cid = posted.json()["id"]
        assert posted.headers["location"] == f"/campaigns/{cid}"
        assert {"rel": "self", "href": f"/campaigns/{cid}"} in posted.json()["links"]
        assert posted.json()["user"] == "root"

        Grid(state).until_done(code=13)  # e fails: its event blocks the campaign until its owner fixes it

        campaign = anonymous.get(f"/campaigns/{cid}").json()  # lists and details are public, as gridstat's
        assert (campaign["state"], campaign["total_jobs"], campaign["finished_jobs"]) == ("in_treatment", 5, 4)
        assert campaign["has_events"] is True
        assert set(campaign["clusters"]) == {"local"}
        listed = anonymous.get("/campaigns").json()
        assert [c["id"] for c in listed["items"]] == [cid] and listed["total"] == 1

        page = anonymous.get(f"/campaigns/{cid}/jobs", params={"limit": 2, "offset": 1}).json()
        assert (page["total"], page["offset"], page["limit"]) == (5, 1, 2)
        assert [job["name"] for job in page["items"]] == ["b", "c"]
        assert {"rel": "next", "href": f"/campaigns/{cid}/jobs?limit=2&offset=3"} in page["links"]
        everything = anonymous.get(f"/campaigns/{cid}/jobs").json()
        assert (everything["limit"], everything["offset"], len(everything["items"])) == (100, 0, 5)
        assert not any(link["rel"] == "next" for link in everything["links"])
        assert anonymous.get(f"/campaigns/{cid}/jobs", params={"offset": 5}).json()["items"] == []
        first = everything["items"][0]
        assert first["state"] == "terminated" and first["parameters"] == "a ok"

        job = client.get(f"/campaigns/{cid}/jobs/{first['id']}").json()
        assert (job["name"], job["exit_code"]) == ("a", 0)
        assert client.get(f"/jobs/{first['id']}").json()["campaign_id"] == cid
        assert client.get(f"/jobs/{first['id']}/stdout").json()["output"] == "done a\n"
        failed = everything["items"][4]
        assert "failure of e" in client.get(f"/jobs/{failed['id']}/stderr").json()["output"]
        # a job's details and outputs, and the JDL, are its owner's, as gridstat -j, -O and -J
        assert "not authenticated" in one_line_error(anonymous.get(f"/jobs/{first['id']}/stdout"), 403)
        assert client.get(f"/campaigns/{cid}/jdl").json()["jdl"]["name"] == "api"

        events = anonymous.get(f"/campaigns/{cid}/events").json()
        assert [event["code"] for event in events["items"]] == ["EXIT_ERROR"] and events["total"] == 1
        exit_error = events["items"][0]
        assert anonymous.get(f"/events/{exit_error['id']}").json()["job_id"] == failed["id"]
        fixed = client.delete(f"/events/{exit_error['id']}")
        assert fixed.status_code == 202, fixed.text
        assert client.get(f"/events/{exit_error['id']}").json()["state"] == "closed"
        assert anonymous.get(f"/campaigns/{cid}/events").json()["items"] == []
        assert len(anonymous.get(f"/campaigns/{cid}/events", params={"all": 1}).json()["items"]) == 1


def test_paging_figures_are_read_in_sql(server, state, tmp_path, job_script):
    lines = [f"j{i} x" for i in range(250)]
    with server.client(headers=ROOT_HEADER) as client:
        cid = client.post("/campaigns", json=jdl(job_script, tmp_path, params=lines)).json()["id"]
        page = client.get(f"/campaigns/{cid}/jobs", params={"limit": 100, "offset": 200}).json()
        assert (page["total"], page["offset"], len(page["items"])) == (250, 200, 50)
        assert page["items"][0]["name"] == "j200"
        assert not any(link["rel"] == "next" for link in page["links"])
        for bad in ({"limit": 0}, {"limit": "ten"}, {"offset": -1}, {"limit": 100_001}):
            assert (
                "limit" in one_line_error(client.get(f"/campaigns/{cid}/jobs", params=bad), 400)
                or "offset" in (client.get(f"/campaigns/{cid}/jobs", params=bad).json()["message"])
            )


def test_the_header_counts_only_from_a_trusted_address(server, state, tmp_path, job_script):
    before = snapshot(state)
    with server.client(source="127.0.0.3", headers=ROOT_HEADER) as untrusted:
        assert untrusted.get("/campaigns").status_code == 200  # read anonymously, as CiGri's API does
        message = one_line_error(untrusted.post("/campaigns", json=jdl(job_script, tmp_path)), 403)
        assert "not authenticated" in message
        one_line_error(untrusted.get("/notifications"), 403)
    with server.client(headers={"X-CIGRI-USER": "unknown"}) as nobody_named:
        one_line_error(nobody_named.post("/campaigns", json=jdl(job_script, tmp_path)), 403)
    assert snapshot(state) == before


def test_another_header_and_trusted_address_are_configurable(state, tmp_path, job_script):
    with serving(state, tmp_path, None, "--user-header", "X-Remote-User", "--trusted", "127.0.0.3") as served:
        with served.client(headers=ROOT_HEADER) as default_header:
            one_line_error(default_header.post("/campaigns", json=jdl(job_script, tmp_path)), 403)
        with served.client(source="127.0.0.3", headers={"X-Remote-User": "root"}) as proxy:
            assert proxy.post("/campaigns", json=jdl(job_script, tmp_path)).status_code == 201


def test_bad_jdl_is_a_400_with_one_line_and_writes_nothing(server, state, tmp_path, job_script):
    before = snapshot(state)
    with server.client(headers=ROOT_HEADER) as client:
        assert "JSON" in one_line_error(client.post("/campaigns", content=b'{"name": "x",'), 400)
        assert "JSON object" in one_line_error(client.post("/campaigns", content=b"[1, 2]"), 400)
        assert "JSON object" in one_line_error(client.post("/campaigns", content=b"name: x\n"), 400)
        bad = jdl(job_script, tmp_path)
        del bad["clusters"]
        assert one_line_error(client.post("/campaigns", json=bad), 400).startswith("clusters: required")
        assert "unknown cluster" in one_line_error(
            client.post("/campaigns", json=jdl(job_script, tmp_path, clusters={"nowhere": {}})), 400
        )
        assert "walltime" in one_line_error(
            client.post("/campaigns", json=jdl(job_script, tmp_path, walltime="x")), 400
        )
        # what the service's own host would read, create or run for the user is refused
        for key, value in (
            ("param_file", "/etc/passwd"),
            ("work_generator", "touch /tmp/cigri-pwned"),
            ("output_destination", "/tmp/cigri-pwned"),
            ("DATA_SOURCE", "/etc"),
        ):
            fields = jdl(job_script, tmp_path, **{key: value})
            del fields["params"]
            assert one_line_error(client.post("/campaigns", json=fields), 400).startswith(f"{key}: not taken")
        assert not Path("/tmp/cigri-pwned").exists()
        assert "JSON array" in one_line_error(client.post("/campaigns/1/jobs", json={"a": 1}), 400)
    assert snapshot(state) == before


def test_a_script_in_a_name_comes_back_as_data(server, tmp_path, job_script):
    name = "<script>alert('x')</script> & co"
    with server.client(headers=ROOT_HEADER) as client:
        cid = client.post("/campaigns", json=jdl(job_script, tmp_path, name=name)).json()["id"]
        answer = client.get(f"/campaigns/{cid}")
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.json()["name"] == name
        assert "<script>" not in answer.text and "<" not in client.get("/campaigns").text
        renamed = client.put(f"/campaigns/{cid}", json={"name": "<b>bold</b>"})
        assert renamed.status_code == 202 and renamed.json()["name"] == "<b>bold</b>"


def test_unknown_things_are_404s_and_wrong_methods_say_what_is_allowed(server):
    with server.client(headers=ROOT_HEADER) as client:
        assert one_line_error(client.get("/campaigns/999"), 404) == "no campaign 999"
        assert one_line_error(client.get("/campaigns/99999999999999999999"), 404).startswith("no campaign")
        one_line_error(client.get("/campaigns/999/jobs"), 404)
        one_line_error(client.get("/campaigns/abc"), 404)
        one_line_error(client.get("/jobs/999/stdout"), 404)
        one_line_error(client.delete("/jobs/999"), 404)
        one_line_error(client.get("/events/999"), 404)
        one_line_error(client.get("/clusters/nowhere"), 404)
        one_line_error(client.get("/nothing/here"), 404)
        one_line_error(client.post("/notifications/jabber", json={"identity": "a@b.c"}), 404)
        wrong = client.post("/campaigns/1", data={"action": "delete"})
        assert "action" in one_line_error(wrong, 405)
        assert wrong.headers["allow"] == "DELETE, GET, PUT"


def test_campaign_changes_notifications_and_usage(server, state, tmp_path, job_script):
    with server.client(headers=ROOT_HEADER) as client:
        cid = client.post("/campaigns", json=jdl(job_script, tmp_path)).json()["id"]
        added = client.post(f"/campaigns/{cid}/jobs", json=["z 9"])
        assert added.status_code == 201 and added.json()["total_jobs"] == 6
        assert client.put(f"/campaigns/{cid}", json={"state": "paused"}).json()["state"] == "paused"
        assert "paused" in one_line_error(client.delete(f"/campaigns/{cid}", params={"hold": 1}), 400)
        assert client.delete(f"/campaigns/{cid}", params={"resume": 1}).status_code == 202
        assert "state" in one_line_error(client.put(f"/campaigns/{cid}", json={"state": "done"}), 400)
        assert "name" in one_line_error(client.put(f"/campaigns/{cid}", json={"name": "  "}), 400)
        job = client.get(f"/campaigns/{cid}/jobs", params={"limit": 1}).json()["items"][0]
        cancelled = client.delete(f"/jobs/{job['id']}")
        assert cancelled.status_code == 202 and "cancelled" in cancelled.json()["message"]
        assert client.delete(f"/campaigns/{cid}").status_code == 202
        assert client.get(f"/campaigns/{cid}").json()["state"] == "cancelled"
        assert "already cancelled" in one_line_error(client.delete(f"/campaigns/{cid}"), 400)
        assert cid not in [c["id"] for c in client.get("/campaigns").json()["items"]]  # running ones, as CiGri
        assert cid in [c["id"] for c in client.get("/campaigns", params={"all": 1}).json()["items"]]
        assert client.delete(f"/campaigns/{cid}", params={"purge": 1}).status_code == 202
        one_line_error(client.get(f"/campaigns/{cid}"), 404)

        subscribed = client.post("/notifications/mail", json={"identity": "root@example.org", "severity": "high"})
        assert subscribed.status_code == 201, subscribed.text
        items = client.get("/notifications").json()["items"]
        assert [(n["kind"], n["target"], n["severity"]) for n in items] == [("mail", "root@example.org", "high")]
        assert "mail address" in one_line_error(client.post("/notifications/mail", json={"identity": "x"}), 400)
        gone = client.delete("/notifications/mail", params={"identity": "root@example.org"})
        assert gone.status_code == 202
        assert client.get("/notifications").json()["items"] == []
        one_line_error(client.delete("/notifications/mail", params={"identity": "root@example.org"}), 404)

        clusters = client.get("/clusters").json()
        assert [c["name"] for c in clusters["items"]] == ["local"]
        assert client.get("/clusters/local").json()["adapter"] == "local"
        usage = client.get("/gridusage", params={"from": 0, "to": 2**40}).json()
        assert {"items", "from", "to", "total", "links"} <= set(usage)
        assert "from" in one_line_error(client.get("/gridusage", params={"from": "yesterday"}), 400)


# -- the Unix socket: the peer's credentials, and a real second user


@contextlib.contextmanager
def socket_folder():
    """A folder in /tmp that another user may enter (not list), for the socket; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="cigri-serve-"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_the_socket_names_its_peer_and_another_user_is_refused(state, tmp_path, job_script):
    require_root("a second user's rights")
    with socket_folder() as folder:
        sock = folder / "cigri.sock"
        with serving(state, tmp_path, f"unix:{sock}") as served:
            with served.client(headers={"X-CIGRI-USER": "alice"}) as client:  # the header means nothing here
                posted = client.post("/campaigns", json=jdl(job_script, tmp_path))
                assert posted.status_code == 201, posted.text
                cid = posted.json()["id"]
                assert posted.json()["user"] == "root"
            before = snapshot(state)
            answers = requests_as_nobody(
                sock,
                [
                    ("DELETE", f"/campaigns/{cid}", {}),
                    ("DELETE", f"/campaigns/{cid}", {"headers": ROOT_HEADER}),
                    ("PUT", f"/campaigns/{cid}?state=paused", {}),
                    ("DELETE", f"/campaigns/{cid}/events", {}),
                    ("GET", f"/campaigns/{cid}/jdl", {}),
                    ("GET", f"/campaigns/{cid}", {}),
                    ("GET", "/notifications", {}),
                ],
            )
            assert snapshot(state) == before
        assert not sock.exists()
    refusal = f"campaign {cid} belongs to root, not nobody"
    assert answers[0] == (403, {"message": refusal, "links": answers[0][1]["links"]})
    assert [status for status, _ in answers] == [403, 403, 403, 403, 403, 200, 200]
    assert answers[5][1]["user"] == "root"


def test_only_the_service_user_runs_jobs_on_its_own_host(state, tmp_path, job_script):
    """The local cluster runs its jobs as the service's user: a user's JDL may not run there."""
    require_root("a second user's rights")
    with socket_folder() as folder:
        sock = folder / "cigri.sock"
        with serving(state, tmp_path, f"unix:{sock}"):
            before = snapshot(state)
            body = json.dumps(jdl(job_script, tmp_path)).encode()
            [(status, answer)] = requests_as_nobody(sock, [("POST", "/campaigns", {"content": body})])
            assert snapshot(state) == before
    assert status == 403
    assert "local" in answer["message"] and "nobody" in answer["message"]


def test_serve_refuses_a_state_it_does_not_own(tmp_path):
    require_root("a second user's rights")
    folder = Path(tempfile.mkdtemp(prefix="cigri-serve-"))
    try:
        state = folder / "state.db"
        state.touch(mode=0o600)
        nobody = pwd.getpwnam("nobody")
        for path in (folder, state):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        result = CliRunner().invoke(grid, ["--state", str(state), "serve", "--listen", f"127.0.0.1:{free_port()}"])
        assert result.exit_code == 6
        assert len(result.stderr.splitlines()) == 1 and "belongs to nobody" in result.stderr
    finally:
        shutil.rmtree(folder)


def test_serve_without_the_service_extra_says_so_in_one_line(state, monkeypatch):
    for name in list(sys.modules):
        if name.startswith(("cigri.service", "starlette", "uvicorn")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "starlette", None)
    result = CliRunner().invoke(grid, ["--state", str(state), "serve"])
    assert result.exit_code != 0
    assert result.stderr.splitlines() == [
        "grid serve: error: grid serve needs the service extra: pip install 'cigri[service]' (missing: starlette)"
    ]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_bad_listen_address_is_one_line(state):
    result = CliRunner().invoke(grid, ["--state", str(state), "serve", "--listen", "localhost"])
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "HOST:PORT" in result.stderr
    result = CliRunner().invoke(grid, ["--state", str(state), "serve", "--trusted", "not-an-address"])
    assert result.exit_code == 2 and "not-an-address" in result.stderr


def test_the_list_of_campaigns_shows_each_change_of_a_campaign_it_already_listed(state, tmp_path, job_script):
    """GET /campaigns keeps each campaign's encoded row between lists: a rename, jobs that ran, a pause, a
    new campaign and a purged one show in the next list, and the list is the one ?pretty gives."""
    ok = {"params": ["a ok", "b ok"]}
    with serving(state, tmp_path) as served, served.client(headers=ROOT_HEADER) as client:
        first = client.post("/campaigns", json=jdl(job_script, tmp_path, name="one", **ok)).json()["id"]
        second = client.post("/campaigns", json=jdl(job_script, tmp_path, name="two", **ok)).json()["id"]
        listed = client.get("/campaigns").json()["items"]
        assert [(c["id"], c["name"], c["finished_jobs"]) for c in listed] == [(first, "one", 0), (second, "two", 0)]
        assert client.put(f"/campaigns/{first}", json={"name": "uno"}).status_code == 202
        assert [c["name"] for c in client.get("/campaigns").json()["items"]] == ["uno", "two"]
        Grid(state).until_done()
        assert client.get("/campaigns").json()["items"] == []
        listed = client.get("/campaigns?all").json()["items"]
        assert [(c["state"], c["finished_jobs"]) for c in listed] == [("terminated", 2)] * 2
        third = client.post("/campaigns", json=jdl(job_script, tmp_path, name="three", **ok)).json()["id"]
        assert client.delete(f"/campaigns/{third}?hold").status_code == 202
        assert client.delete(f"/campaigns/{first}?purge").status_code == 202
        plain, pretty = client.get("/campaigns?all"), client.get("/campaigns?all&pretty")
        assert [(c["id"], c["state"]) for c in plain.json()["items"]] == [(second, "terminated"), (third, "paused")]
        assert plain.json() == pretty.json() and plain.text != pretty.text
