"""The web dashboard of ``grid serve`` (issue 25, item 4), in a real headless browser: Debian's chromium driven by
its chromedriver through Selenium (no browser download: both paths are given). The service runs for real as in
tests/test_service.py; a browser cannot set the trusted user header on its navigations, so a small reverse proxy
here adds it, as a site's front proxy does. The pages must show what the API says, follow a running campaign,
let the owner (only) act on it with a CSRF token, and show a name holding markup as text."""

from __future__ import annotations

import http.client
import os
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from cigri import campaigns as ops
from cigri import jdl as jdl_mod
from cigri.clock import RealClock
from cigri.model import Capacity
from cigri.service.charts import svg
from cigri.store import Store

from .conftest import Grid
from .needs import unavailable
from .test_service import serving, snapshot

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT = 30  # seconds: a loaded two-core box; each wait ends as soon as its condition holds
COUNTS = ("finished_jobs", "total_jobs", "running_jobs", "waiting_jobs", "failed_jobs")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"}


# -- a front proxy naming the user, as a site's nginx does after authenticating them


class FrontProxy:
    """A reverse proxy on 127.0.0.1 that forwards everything to the service with ``X-CIGRI-USER: user`` (a
    header the client sent under that name is dropped)."""

    def __init__(self, upstream: str, user: str):
        host, _, port = upstream.rpartition(":")

        class Forward(BaseHTTPRequestHandler):
            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    name: value
                    for name, value in self.headers.items()
                    if name.lower() not in HOP_BY_HOP and name.lower() != "x-cigri-user"
                }
                headers["X-CIGRI-USER"] = user
                upstream_conn = http.client.HTTPConnection(host, int(port), timeout=60)
                try:
                    upstream_conn.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream_conn.getresponse()
                    data = answer.read()
                finally:
                    upstream_conn.close()
                self.send_response_only(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_HEAD = forward

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class Site:
    """The service, and alice behind the front proxy."""

    def __init__(self, served, proxy: FrontProxy):
        self.served = served
        self.proxy = proxy

    def api(self, path: str, **params) -> dict:
        with self.served.client() as client:
            answer = client.get(path, params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def as_alice(self) -> httpx.Client:
        return httpx.Client(base_url=self.proxy.url, timeout=60)


@pytest.fixture
def site(state, tmp_path):
    with serving(state, tmp_path, None, "--trusted", "127.0.0.1") as served:
        proxy = FrontProxy(served.listen, "alice")
        try:
            yield Site(served, proxy)
        finally:
            proxy.close()


# -- the browser


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Debian's chromium, headless, with a profile and temporary files in pytest's tmp folder; quit at the end
    (chromedriver and every chromium process with it)."""
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        unavailable(
            "the dashboard's tests need Debian's chromium and chromium-driver: apt-get install chromium chromium-driver"
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("the dashboard's tests need selenium (the test extra)")
    home = tmp_path_factory.mktemp("chromium")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--window-size=1400,1000",
        f"--user-data-dir={home / 'profile'}",
    ):
        options.add_argument(flag)
    environment = {**os.environ, "TMPDIR": str(home), "HOME": str(home)}
    service = Service(str(CHROMEDRIVER), log_output=str(home / "chromedriver.log"), env=environment)
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver, condition, timeout: float = WAIT):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def load(driver, url: str):
    """Open ``url`` and wait until its script has updated the page from the JSON once."""
    from selenium.webdriver.common.by import By

    driver.get(url)
    wait(driver, lambda d: int(d.find_element(By.TAG_NAME, "body").get_attribute("data-updates") or 0) >= 1)


def updates(driver) -> int:
    from selenium.webdriver.common.by import By

    return int(driver.find_element(By.TAG_NAME, "body").get_attribute("data-updates") or 0)


def field(scope, name: str) -> str:
    from selenium.webdriver.common.by import By

    return scope.find_element(By.CSS_SELECTOR, f'[data-field="{name}"]').text


def text_of(scope, name: str) -> str:
    """A field's text as the page holds it (Selenium's .text is what is rendered)."""
    from selenium.webdriver.common.by import By

    return scope.find_element(By.CSS_SELECTOR, f'[data-field="{name}"]').get_property("textContent")


def value(scope, name: str) -> str | None:
    from selenium.webdriver.common.by import By

    return scope.find_element(By.CSS_SELECTOR, f'[data-field="{name}"]').get_attribute("data-value")


def row(driver, table: str, key) -> object:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f'#{table} tbody tr[data-id="{key}"]')


def buttons(scope) -> list[str]:
    from selenium.webdriver.common.by import By

    return [button.get_attribute("value") for button in scope.find_elements(By.CSS_SELECTOR, "form.action button")]


# -- campaigns of alice and bob, recorded as gridsub records them


def submit(state: Path, job_script: Path, user: str, name: str = "dash", params=None) -> int:
    data = {
        "name": name,
        "exec_file": str(job_script),
        "exec_directory": str(job_script.parent),
        "walltime": "00:01:00",
        "clusters": {"local": {}},
        "params": params or ["a ok", "b ok", "c ok", "d ok", "e fail"],
    }
    store = Store(state)
    try:
        cid, _ = ops.submit(store, jdl_mod.parse(data), RealClock(), user=user)
    finally:
        store.close()
    return cid


def figure(number: float | None) -> str | None:
    """A number as the page keeps it in data-value (JavaScript's shortest round trip, as Python's repr)."""
    return None if number is None else repr(number)


def counts(scope) -> dict:
    return {name: int(field(scope, name)) for name in COUNTS}


def api_counts(answer: dict) -> dict:
    return {name: answer[name] for name in COUNTS}


def test_the_pages_show_what_the_api_says_and_follow_a_running_campaign(browser, site, state, job_script):
    cid = submit(state, job_script, "alice")
    load(browser, f"{site.proxy.url}/dashboard?refresh=1")
    shown = row(browser, "campaigns", cid)
    assert (
        counts(shown)
        == api_counts(site.api(f"/campaigns/{cid}"))
        == {
            "finished_jobs": 0,
            "total_jobs": 5,
            "running_jobs": 0,
            "waiting_jobs": 5,
            "failed_jobs": 0,
        }
    )
    assert (field(shown, "name"), field(shown, "user"), field(shown, "state")) == ("dash", "alice", "in_treatment")
    assert field(shown, "percent") == "0"

    Grid(state).until_done(code=13)  # e fails: its event blocks the campaign until alice fixes it
    expected = api_counts(site.api(f"/campaigns/{cid}"))
    assert expected["finished_jobs"] == 4 and expected["failed_jobs"] == 1
    answer = site.api(f"/campaigns/{cid}")

    def followed(driver) -> bool:  # the page follows by itself, its next update after the cycle's last pass
        shown = row(driver, "campaigns", cid)
        throughput = value(shown, "throughput_per_hour")
        return counts(shown) == expected and throughput == figure(answer["throughput_per_hour"])

    wait(browser, followed)
    shown = row(browser, "campaigns", cid)
    assert field(shown, "percent") == "80" and field(shown, "open_events") == "1"
    per_hour = answer["throughput_per_hour"]  # none when the jobs ended within too short a window
    assert field(shown, "throughput_per_hour") == ("—" if per_hour is None else f"{per_hour:.1f} jobs/h")
    assert field(shown, "estimated_end") == "—"  # blocked: it ends once its event is fixed, as gridstat says
    assert "open event" in field(shown, "interval")
    for reading in site.api("/gridusage")["items"]:
        usage = row(browser, "usage", reading["cluster"])
        assert {name: int(value(usage, name)) for name in ("used", "used_by_grid", "unavailable", "max")} == {
            name: reading[name] for name in ("used", "used_by_grid", "unavailable", "max")
        }

    load(browser, f"{site.proxy.url}/dashboard/campaigns/{cid}?refresh=1")
    from selenium.webdriver.common.by import By

    section = browser.find_element(By.ID, "campaign")
    assert counts(section) == api_counts(answer)
    events = site.api(f"/campaigns/{cid}/events")["items"]
    assert len(events) == 1
    shown_event = row(browser, "events", events[0]["id"])
    assert (field(shown_event, "code"), field(shown_event, "job_id")) == ("EXIT_ERROR", str(events[0]["job_id"]))
    assert text_of(shown_event, "message") == events[0]["message"]  # its lines kept
    assert field(row(browser, "clusters", "local"), "launched_jobs") == str(
        answer["clusters"]["local"]["launched_jobs"]
    )
    plot = browser.find_element(By.ID, "plot")
    wait(browser, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", plot))


def test_the_estimated_end_and_its_interval_are_spritz_s(browser, site, state, job_script):
    cid = submit(state, job_script, "alice")
    now = RealClock().now()
    store = Store(state)
    try:
        with store.transaction():
            store.set_forecast(
                cid, now, 2, 0.5, now + 600, rate=0.5, left=3, eta_low=now + 500, eta_high=now + 900, first_start=now
            )
            store.add_forecasts([(cid, "", now - 60, 1, 4, 0.4, 10.0, 1.0, now + 700, now + 550, now + 950)], now)
            store.add_forecasts([(cid, "", now, 2, 3, 0.5, 10.0, 1.0, now + 600, now + 500, now + 900)], now)
            store.record_usage({"local": Capacity(total=8, used=3, grid_used=2, queued=0, down=1)}, now)
    finally:
        store.close()
    answer = site.api(f"/campaigns/{cid}")
    load(browser, f"{site.proxy.url}/dashboard?refresh=1")
    shown = row(browser, "campaigns", cid)
    assert float(value(shown, "estimated_end")) == pytest.approx(answer["estimated_end"]) == pytest.approx(now + 600)
    assert float(value(shown, "throughput_per_hour")) == pytest.approx(answer["throughput_per_hour"]) == 1800
    assert field(shown, "throughput_per_hour") == "1800.0 jobs/h"
    assert " – " in field(shown, "interval")  # from its low to its high bound, in the browser's time zone
    usage = row(browser, "usage", "local")
    assert (value(usage, "used"), value(usage, "used_by_grid"), value(usage, "max")) == ("3", "2", "9")

    with site.as_alice() as alice:
        drawn = alice.get(f"/dashboard/campaigns/{cid}/plot.svg")
    assert drawn.status_code == 200 and drawn.headers["content-type"].startswith("image/svg+xml")
    picture = ET.fromstring(drawn.text)
    assert picture.find("{http://www.w3.org/2000/svg}g/{http://www.w3.org/2000/svg}polygon") is not None  # the band


def test_the_owner_pauses_resumes_fixes_and_cancels_from_the_page(browser, site, state, job_script):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions

    cid = submit(state, job_script, "alice")
    Grid(state).until_done(code=13)
    load(browser, f"{site.proxy.url}/dashboard/campaigns/{cid}?refresh=2")
    section = browser.find_element(By.ID, "campaign")
    assert buttons(section) == ["pause", "cancel", "fix", "fix-resubmit"]

    def click(scope, action: str) -> None:
        scope.find_element(By.CSS_SELECTOR, f'form.action button[value="{action}"]').click()

    def api_state() -> str:
        return site.api(f"/campaigns/{cid}")["state"]

    click(section, "pause")
    wait(browser, lambda d: field(d.find_element(By.ID, "campaign"), "state") == "paused")
    assert api_state() == "paused"
    assert "paused" in browser.find_element(By.ID, "said").text
    wait(browser, lambda d: buttons(d.find_element(By.ID, "campaign"))[:2] == ["resume", "cancel"])

    click(browser.find_element(By.ID, "campaign"), "resume")
    wait(browser, lambda d: field(d.find_element(By.ID, "campaign"), "state") == "in_treatment")
    assert api_state() == "in_treatment"

    event = site.api(f"/campaigns/{cid}/events")["items"][0]
    click(row(browser, "events", event["id"]), "fix")
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, f'#events tbody tr[data-id="{event["id"]}"]'))
    assert site.api(f"/events/{event['id']}")["state"] == "closed"
    assert site.api(f"/campaigns/{cid}")["has_events"] is False
    wait(browser, lambda d: buttons(d.find_element(By.ID, "campaign")) == ["pause", "cancel"])

    click(browser.find_element(By.ID, "campaign"), "cancel")
    wait(browser, expected_conditions.alert_is_present()).accept()  # "Cancel campaign N?"
    wait(browser, lambda d: field(d.find_element(By.ID, "campaign"), "state") == "cancelled")
    assert api_state() == "cancelled"
    wait(browser, lambda d: buttons(d.find_element(By.ID, "campaign")) == [])


def test_a_post_without_its_csrf_token_is_refused_and_changes_nothing(site, state, job_script):
    cid = submit(state, job_script, "alice")
    before = snapshot(state)
    with site.as_alice() as alice:
        page = alice.get("/dashboard")
        assert page.status_code == 200
        cookie = page.headers["set-cookie"]
        assert "SameSite=strict" in cookie and "HttpOnly" in cookie
        token = page.text.split('name="cigri-csrf" content="')[1].split('"')[0]
        assert len(token) == 64
        pause = f"/dashboard/campaigns/{cid}/pause"
        json_please = {"Accept": "application/json"}
        assert alice.post(pause, headers=json_please).status_code == 403  # no token
        assert alice.post(pause, data={"csrf": "0" * 64}, headers=json_please).status_code == 403  # a wrong one
        cross = {**json_please, "Sec-Fetch-Site": "cross-site"}
        assert alice.post(pause, data={"csrf": token}, headers=cross).status_code == 403
        with httpx.Client(base_url=site.proxy.url) as no_cookie:  # the token alone, as a forged form sends it
            refused = no_cookie.post(pause, data={"csrf": token}, headers=json_please)
            assert refused.status_code == 403 and "CSRF" in refused.json()["message"]
        assert alice.get(pause).status_code == 405  # changes are POSTs only
        assert alice.get("/dashboard/campaigns/999").status_code == 404
        moved = alice.get("/dashboard/")  # its relative links need the name without the slash
        assert moved.status_code == 308 and moved.headers["location"] == "../dashboard"
        with site.served.client() as anonymous:  # no proxy, no user: nothing to change
            refused = anonymous.post(pause, data={"csrf": token}, headers=json_please)
            assert refused.status_code == 403 and "not authenticated" in refused.json()["message"]
        assert snapshot(state) == before

        done = alice.post(pause, data={"csrf": token}, headers=json_please)  # the form's field, with its cookie
        assert done.status_code == 200 and "paused" in done.json()["message"]
        resumed = alice.post(f"/dashboard/campaigns/{cid}/resume", headers={**json_please, "X-CSRF-Token": token})
        assert resumed.status_code == 200
        without_script = alice.post(pause, data={"csrf": token})  # a plain form: back to the campaign's page
        assert without_script.status_code == 303 and without_script.headers["location"] == f"../{cid}"
    assert site.api(f"/campaigns/{cid}")["state"] == "paused"


def test_another_users_campaign_has_no_buttons_and_a_forged_post_is_refused(browser, site, state, job_script):
    from selenium.webdriver.common.by import By

    mine = submit(state, job_script, "alice", "mine")
    theirs = submit(state, job_script, "bob", "theirs")
    load(browser, f"{site.proxy.url}/dashboard?refresh=1")
    assert buttons(row(browser, "campaigns", mine)) == ["pause", "cancel"]
    assert buttons(row(browser, "campaigns", theirs)) == []
    load(browser, f"{site.proxy.url}/dashboard/campaigns/{theirs}?refresh=1")
    assert field(browser.find_element(By.ID, "campaign"), "user") == "bob"
    assert browser.find_elements(By.CSS_SELECTOR, "form.action") == []

    before = snapshot(state)
    with site.as_alice() as alice:
        token = alice.get("/dashboard").text.split('name="cigri-csrf" content="')[1].split('"')[0]
        for action in ("pause", "cancel", "fix"):
            forged = alice.post(
                f"/dashboard/campaigns/{theirs}/{action}", data={"csrf": token}, headers={"Accept": "application/json"}
            )
            assert forged.status_code == 403, forged.text
            assert forged.json()["message"] == f"campaign {theirs} belongs to bob, not alice"
    assert snapshot(state) == before
    assert site.api(f"/campaigns/{theirs}")["state"] == "in_treatment"


def test_a_script_in_a_name_shows_as_text(browser, site, state, job_script):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    name = "<script>alert(1)</script>"
    cid = submit(state, job_script, "alice", name)
    for path in ("/dashboard?refresh=1", f"/dashboard/campaigns/{cid}?refresh=1"):
        load(browser, site.proxy.url + path)
        seen = updates(browser)
        wait(browser, lambda d, seen=seen: updates(d) > seen)  # once more, from the JSON this time
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018 (asking is the check)
        shown = browser.find_element(By.CSS_SELECTOR, '[data-field="name"]')
        assert shown.text == name
        assert shown.find_elements(By.CSS_SELECTOR, "*") == []  # text, not an element
        scripts = [s.get_attribute("src") for s in browser.find_elements(By.TAG_NAME, "script")]
        assert len(scripts) == 1 and scripts[0].endswith("/dashboard/static/dashboard.js")
    with site.as_alice() as alice:
        drawn = alice.get(f"/dashboard/campaigns/{cid}/plot.svg").text
    title = ET.fromstring(drawn).find("{http://www.w3.org/2000/svg}g/{http://www.w3.org/2000/svg}text")
    assert name in title.text
    assert "<script>" not in drawn


def test_the_pictures_are_svg_without_any_forecast_or_end(state, job_script):
    """A campaign just submitted: nothing done, no throughput, no forecast; still a picture, with notes."""
    from cigri.progress import progress

    cid = submit(state, job_script, "alice", "a & b")
    store = Store(state)
    try:
        drawn = svg(progress(store, cid, RealClock().now()))
    finally:
        store.close()
    texts = [t.text for t in ET.fromstring(drawn).iter("{http://www.w3.org/2000/svg}text")]
    assert "Campaign" in texts[0] and "a & b" in texts[0]
    assert "no forecast recorded" in texts and any("throughput" in t for t in texts)
