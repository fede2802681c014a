"""The ``grid`` command and the standalone gridsub, gridstat, griddel, gridevents, gridclusters, gridnotify scripts."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping

import click

from .app import GridGroup, common

# every command, by name: the module defining it (as an attribute of the same name), imported when it is first used
MODULES = {
    "gridsub": "campaign_cmds",
    "gridstat": "campaign_cmds",
    "griddel": "campaign_cmds",
    "gridevents": "campaign_cmds",
    "gridclusters": "cluster_cmds",
    "gridnotify": "notify_cmds",
    "almighty": "cycle_cmds",
    "updator": "cycle_cmds",
    "spritz": "cycle_cmds",
    "metasched": "cycle_cmds",
    "runner": "cycle_cmds",
    "nikita": "cycle_cmds",
    "simulate": "sim_cmds",
    "config": "config_cmds",
    "policy": "policy_cmds",
    "admin": "admin_cmds",
    "doctor": "doctor_cmds",
    "serve": "serve_cmds",
    "completion": "completion",
}


class Commands(Mapping[str, click.Command]):
    """Commands by name, each one's module imported when it is first asked for: a command starts with its own
    module and what that imports, not every command's."""

    def __init__(self, names: Iterable[str]):
        self.names = tuple(names)

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.names:
            raise KeyError(name)
        command = getattr(importlib.import_module(f"{__name__}.{MODULES[name]}"), name)
        # -h is help wherever a command runs: under grid, as its own script, in a completion request. Click caches
        # a command's help option from the first context it sees, so the names belong to the command, not to a call.
        command.context_settings.setdefault("help_option_names", ["-h", "--help"])
        return command

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


@click.group(
    "grid", cls=GridGroup, commands=Commands(MODULES), context_settings={"help_option_names": ["-h", "--help"]}
)
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


STANDALONE = Commands(("gridsub", "gridstat", "griddel", "gridevents", "gridclusters", "gridnotify"))


def __getattr__(name: str) -> click.Command:
    """``from cigri.cli import gridstat``: the command, its module imported now."""
    if name in MODULES:
        return grid.commands[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
