"""The ``grid`` command and the standalone gridsub, gridstat, griddel, gridevents, gridclusters scripts."""

from __future__ import annotations

import click

from .admin_cmds import admin
from .app import GridGroup, common
from .campaign_cmds import griddel, gridevents, gridstat, gridsub
from .cluster_cmds import gridclusters
from .completion import completion
from .config_cmds import config
from .cycle_cmds import STAGE_COMMANDS, almighty
from .policy_cmds import policy
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
    almighty,
    *STAGE_COMMANDS,
    simulate,
    config,
    policy,
    admin,
    completion,
):
    grid.add_command(command)

STANDALONE = {c.name: c for c in (gridsub, gridstat, griddel, gridevents, gridclusters)}


def _standalone(name: str):
    def main():
        STANDALONE[name].main(prog_name=name, help_option_names=["-h", "--help"])

    return main


gridsub_main = _standalone("gridsub")
gridstat_main = _standalone("gridstat")
griddel_main = _standalone("griddel")
gridevents_main = _standalone("gridevents")
gridclusters_main = _standalone("gridclusters")

__all__ = ["STANDALONE", "common", "grid"]
