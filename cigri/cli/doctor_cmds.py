"""grid doctor: the state file and every cluster checked, one line each, what to fix said."""

from __future__ import annotations

import click

from .. import doctor as checks
from ..errors import CigriError
from ..secrets import mask_text
from ..store import default_state_path
from . import output
from .app import app, common


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="JSON output: a list of {subject, check, ok, message}.")
@common
def doctor(as_json):
    """Check the state file and each cluster's setup; say what to fix.

    Checks the state's invariants (as grid admin check), then for each cluster its credentials (the ssh
    identity_file exists and is 0600, a token_file holds a token that has not expired), that it answers, its
    resource manager's version, and the cluster user's home and the folders cigri writes there (remote_dir,
    output_dir). Prints one line per finding, "ok" or "FIX" followed by what to do; exits 1 when anything needs
    fixing. Changes neither the state nor anything on the clusters.

    \b
    Example:
        grid doctor
        grid doctor --json | jq '.[] | select(.ok == false)'
    """
    a = app()
    findings = checks.diagnose(a.state_path or default_state_path(), a.clock, a.trust_owner)
    if as_json:
        output.emit_json([{"subject": f.subject, "check": f.check, "ok": f.ok, "message": f.message} for f in findings])
    else:
        for finding in findings:
            click.echo(mask_text(str(finding)))
    wrong = sum(not f.ok for f in findings)
    if wrong:
        raise CigriError(f"{wrong} thing{'s' if wrong > 1 else ''} to fix")
