"""The ``grid`` command and the standalone gridsub, gridstat, griddel, gridevents, gridclusters, gridnotify scripts."""

from __future__ import annotations

import click

from .admin_cmds import admin
from .app import GridGroup, common
from .campaign_cmds import griddel, gridevents, gridstat, gridsub
from .cluster_cmds import gridclusters
from .completion import completion
from .config_cmds import config
from .cycle_cmds import STAGE_COMMANDS, almighty
from .doctor_cmds import doctor
from .notify_cmds import gridnotify
from .policy_cmds import policy
from .serve_cmds import serve
from .sim_cmds import simulate


@click.group("grid", cls=GridGroup, context_settings={"help_option_names": ["-h", "--help"]})
@common
def grid():
    """cigri: run campaigns of many independent jobs over clusters.

    \b
    Example:
        gridsub jdl-examples/sweep.yaml      # prints CAMPAIGN_ID=1
        grid almighty --until-done           # runs it on the local cluster
        gridstat -c 1
        gridstat --version
        eval "$(grid completion bash)"
    """


for command in (
    gridsub,
    gridstat,
    griddel,
    gridevents,
    gridclusters,
    gridnotify,
    almighty,
    *STAGE_COMMANDS,
    simulate,
    config,
    policy,
    admin,
    doctor,
    serve,
    completion,
):
    grid.add_command(command)

STANDALONE = {c.name: c for c in (gridsub, gridstat, griddel, gridevents, gridclusters, gridnotify)}
for command in STANDALONE.values():
    # -h is help wherever a command runs: under grid, as its own script, in a completion request. Click caches a
    # command's help option from the first context it sees, so the names belong to the command, not to a call.
    command.context_settings.setdefault("help_option_names", ["-h", "--help"])


def _standalone(name: str):
    def main():
        STANDALONE[name].main(prog_name=name)

    return main


gridsub_main = _standalone("gridsub")
gridstat_main = _standalone("gridstat")
griddel_main = _standalone("griddel")
gridevents_main = _standalone("gridevents")
gridclusters_main = _standalone("gridclusters")
gridnotify_main = _standalone("gridnotify")

__all__ = ["STANDALONE", "common", "grid"]
