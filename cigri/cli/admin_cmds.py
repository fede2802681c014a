"""grid admin: the state's upkeep (check)."""

from __future__ import annotations

import click

from .. import integrity
from ..errors import Inconsistent
from ..store import Store, default_state_path
from . import output
from .app import GridGroup, app, common


@click.group("admin", cls=GridGroup)
@common
def admin():
    """Look after the state file.

    \b
    Example:
        grid admin check
        grid admin check --json
    """


CHECK_HELP = """Check the state's invariants; change nothing.

Prints one line per problem, named by its check, and exits 11 when there is any; prints nothing and exits 0
when the state is consistent. What a pass killed anywhere leaves for the next pass to finish (a batch being
submitted, a kill asked) is consistent. The state is opened read-only: check it while almighty runs.

\b
Checks:
{checks}

\b
Example:
    grid admin check && echo consistent
"""


@admin.command(
    "check",
    help=CHECK_HELP.format(checks="\n".join(f"    {name:<11} {what}" for name, what in integrity.described())),
)
@click.option("--json", "as_json", is_flag=True, help="JSON output: a list of {check, problem}.")
@common
def check(as_json):
    a = app()
    store = Store(a.state_path or default_state_path(), readonly=True, trust_owner=a.trust_owner)
    try:
        problems = integrity.check(store)
    finally:
        store.close()
    if as_json:
        output.emit_json([{"check": p.check, "problem": p.message} for p in problems])
    else:
        for problem in problems:
            click.echo(str(problem))
    if problems:
        raise Inconsistent(f"{len(problems)} problem{'s' if len(problems) > 1 else ''} found")
