"""Shell completion (bash, zsh, fish) through click's protocol: ``grid completion SHELL`` prints the scripts of
grid and of the standalone commands; campaign ids and cluster names come from the state file, opened read-only
(completing never creates or writes one, and a missing or unreadable one completes nothing)."""

from __future__ import annotations

import sqlite3

import click
from click.shell_completion import CompletionItem, get_completion_class

from ..errors import CigriError
from .app import GridCommand

SHELLS = ("bash", "zsh", "fish")


def _read_only_store(ctx: click.Context):
    from ..store import Store, default_state_path
    from .app import App

    root = ctx.find_root().obj
    path = root.state_path if isinstance(root, App) and root.state_path else default_state_path()
    return Store(path, readonly=True)


def _names(ctx: click.Context, list_them) -> list[tuple[str, str]]:
    """(value, help) pairs ``list_them(store)`` gives, or none when the state cannot be read."""
    try:
        store = _read_only_store(ctx)
    except (CigriError, sqlite3.Error, OSError):
        return []
    try:
        return list_them(store)
    except (CigriError, sqlite3.Error):
        return []
    finally:
        store.close()


def campaign_ids(ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """Campaign ids (their name as help); after a comma (griddel -c 3,4), the ids that may follow."""
    head, _, last = incomplete.rpartition(",")
    prefix = f"{head}," if head else ""
    found = _names(ctx, lambda store: [(str(c.id), f"{c.name} ({c.state.value})") for c in store.campaigns()])
    return [CompletionItem(prefix + value, help=text) for value, text in found if value.startswith(last)]


def cluster_names(ctx: click.Context, _param, incomplete: str) -> list[CompletionItem]:
    """Cluster names (their adapter as help)."""
    found = _names(ctx, lambda store: [(c.name, c.adapter) for c in store.clusters()])
    return [CompletionItem(value, help=text) for value, text in found if value.startswith(incomplete)]


def scripts(shell: str, commands: dict[str, click.Command]) -> str:
    """The completion scripts of ``commands`` (program name -> command) for ``shell``, one after the other."""
    kind = get_completion_class(shell)
    return "\n".join(
        kind(command, {}, name, f"_{name.upper().replace('-', '_')}_COMPLETE").source()
        for name, command in commands.items()
    )


@click.command("completion", cls=GridCommand)
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell):
    """Print the shell completion of grid, gridsub, gridstat, griddel, gridevents and gridclusters.

    Campaign ids (-c, griddel, gridstat) and cluster names (gridclusters -i, set,
    remove; gridevents --blacklist-cluster) are completed from the state file,
    read only.

    \b
    Example:
        eval "$(grid completion bash)"          # in ~/.bashrc
        eval "$(grid completion zsh)"           # in ~/.zshrc
        grid completion fish > ~/.config/fish/completions/grid.fish
    """
    from . import STANDALONE, grid

    click.echo(scripts(shell, {"grid": grid, **STANDALONE}))
