"""Secrets are masked by the parts of their names (a documented list), whatever the quoting of their values in a
text, and a campaign's environment values are masked in its messages wherever they appear, named or not."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

import pytest

from cigri import campaigns as ops
from cigri import secrets
from cigri.adapters import AdapterContext, adapter_for
from cigri.clock import RealClock
from cigri.cycle import Cycle
from cigri.errors import AdapterError, SubmitError
from cigri.jdl import load
from cigri.model import JobSpec
from cigri.secrets import MASK, is_secret, mask, mask_text, mask_values, secret_values

from .conftest import wait_for, write_jdl

PASSWORD = "hunter2 'pass'"  # a quote and a space: shells show it quoted
DSN = "https://k3y@sentry.example/1"  # a secret whose name says nothing of it
ENVIRONMENT = {"DB_PASS": PASSWORD, "SENTRY_DSN": DSN, "MODE": "fast"}


@pytest.mark.parametrize(
    "name",
    [
        "DB_PASS",
        "MY_PASSPHRASE",
        "AWS_CREDENTIALS",
        "GIT_CREDENTIAL",
        "PRIVATE_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "api_key",
        "apiKey",
        "accessKeys",
        "DB_PWD",
        "dbPassword",
        "SLURM_JWT",
        "GITHUB_TOKEN",
        "clusters.a.environment.DB_PASS",
    ],
)
def test_a_name_holding_a_listed_part_is_a_secret(name):
    assert is_secret(name)
    assert mask({name: "s3cr3t-value"}) == {name: MASK}
    assert mask_text(f"job failed: {name}=s3cr3t-value") == f"job failed: {name}={MASK}"


@pytest.mark.parametrize("name", ["keyboard", "MONKEY", "BYPASS", "COMPASS_DIR", "PASSAGE", "key_file", "token_file"])
def test_a_name_merely_containing_the_letters_of_a_part_is_not(name):
    assert not is_secret(name)
    assert mask_text(f"{name}=shown") == f"{name}=shown"


def test_the_docstring_lists_every_name_part_masked():
    listed = secrets.__doc__ or ""
    for part in (*secrets.SECRET_WORDS, *secrets.SECRET_PARTS):
        assert f"``{part}``" in listed, f"{part} is masked but not documented"


@pytest.mark.parametrize(
    "text",
    [
        f"export DB_PASS={shlex.quote(PASSWORD)}",
        f'DB_PASS="{PASSWORD}" sbatch job.sh',
        "export DB_PASS=hunter2\\ pass",
        f"{{'DB_PASS': {PASSWORD!r}}}",
        f'{{"db_pass": "{PASSWORD}"}}',
    ],
)
def test_a_named_secret_is_masked_whatever_its_quoting(text):
    masked = mask_text(text)
    assert "hunter2" not in masked and "pass'" not in masked and MASK in masked


def test_environment_values_are_masked_wherever_they_appear_and_quoted_as_shells_quote_them():
    values = secret_values(ENVIRONMENT)
    assert set(values) == {PASSWORD, DSN}  # "fast": too short to be a secret, and masking it would hide words
    for shown in (PASSWORD, shlex.quote(PASSWORD), DSN, shlex.quote(DSN)):
        masked = mask_values(f"cannot connect with {shown}: refused (mode fast)", values)
        assert masked == f"cannot connect with {MASK}: refused (mode fast)"
    assert secret_values({"DB_PASS": "abc", "KEY": ""}) == ["abc"]  # named secrets from three characters


# ---- in the cycle: the campaign's events ----------------------------------------------------------------------


def failing_job(folder) -> str:
    script = folder / "leaky.sh"
    script.write_text(
        '#!/bin/sh\necho "connecting to $SENTRY_DSN as $DB_PASS" >&2\nexport | grep DB_PASS >&2\nexit 3\n'
    )
    script.chmod(0o755)
    return str(script)


def test_a_jobs_stderr_quoted_in_its_event_shows_none_of_the_campaigns_environment_values(cli, tmp_path):
    cid = cli.submit(write_jdl(tmp_path, exec_file=failing_job(tmp_path), params=["a"], environment=ENVIRONMENT))
    cli.until_done(code=13)  # its event blocks the campaign
    [event] = cli.json("gridevents", "-c", str(cid), "-e", "EXIT_ERROR")
    assert "exited with status 3" in event["message"] and "connecting to" in event["message"]
    assert "hunter2" not in event["message"] and "k3y" not in event["message"]


class Refusing:
    """The real local adapter, whose submissions fail with messages quoting the jobs' environment (as an
    RM echoing its command line would)."""

    def __init__(self, inner, error: type[AdapterError]):
        self.inner, self.error = inner, error

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        exports = "; ".join(f"export {k}={shlex.quote(v)}" for k, v in specs[0].env.items())
        raise self.error(f"local refused the batch: {exports}; DSN was {specs[0].env['SENTRY_DSN']}")


@pytest.mark.parametrize(("error", "kind"), [(SubmitError, "campaign"), (AdapterError, "cluster")])
def test_a_refused_submission_shows_none_of_the_campaigns_environment_values(store, tmp_path, caplog, error, kind):
    jdl = load(write_jdl(tmp_path, exec_file="/bin/true", params=["a"], environment=ENVIRONMENT))
    cid = ops.submit(store, jdl, RealClock())[0]
    clock = RealClock()
    cycle = Cycle(
        store,
        clock,
        adapters=lambda name: Refusing(adapter_for(store.cluster(name), AdapterContext(store.directory, clock)), error),
    )
    try:
        wait_for(lambda: (cycle.run(), store.events())[1])
    finally:
        cycle.close()
    [event] = store.events()
    assert (event.cls.value, event.campaign_id) == (kind, cid if kind == "campaign" else None)
    assert event.message.startswith("local refused the batch: export DB_PASS=")
    shown = event.message + caplog.text
    assert "hunter2" not in shown and "k3y" not in shown and re.search(r"\bMODE=fast\b", shown)


def test_a_fraction_a_flag_or_nothing_under_a_secret_name_is_shown():
    """A cycle's pass is not a password: the simulator's ``mean_pass_seconds`` stays readable in --json, while a
    text or a whole number (a PIN) under such a name is hidden."""
    assert mask({"mean_pass_seconds": 0.25, "use_key": True, "api_token": None}) == {
        "mean_pass_seconds": 0.25,
        "use_key": True,
        "api_token": None,
    }
    assert mask({"DB_PASS": "hunter22", "pin_key": 1234}) == {"DB_PASS": MASK, "pin_key": MASK}


def test_any_event_of_a_campaign_shows_none_of_its_environment_values(store, tmp_path):
    """The one place every event is written masks the campaign's environment values, whatever stage wrote
    the message (a prologue's error, a gathering error, a stage yet to come), not only the job errors."""
    from cigri.model import EventClass, EventCode

    environment = {"API_TOKEN": "tok-Zq7x", "DSN": "postgres://db/very-long-name", "MODE": "fast"}
    jdl = load(write_jdl(tmp_path, exec_file="/bin/true", params=["a"], environment=environment))
    cid = ops.submit(store, jdl, RealClock())[0]
    message = "prologue said: tok-Zq7x 'postgres://db/very-long-name' in fast mode"
    with store.transaction():
        event_id = store.open_event(EventClass.CAMPAIGN, EventCode.PROLOGUE_ERROR, message, 0.0, campaign_id=cid)
    [event] = store.events(event_id=event_id)
    assert event.message == "prologue said: *** '***' in fast mode"
