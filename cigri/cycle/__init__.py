"""The almighty cycle: updator -> spritz -> metasched -> runner -> nikita, one pass at a time.

Every stage reads the state, acts, and commits in short transactions, so a pass killed at any point
is finished by the next one: a submission is recorded as a batch (its jobs ``launching``) before the
resource manager is called, and the batch key lets the next pass ask the RM whether it already holds
it instead of submitting it again.

One module per stage, named after it (:mod:`.updator`, :mod:`.spritz`, :mod:`.metasched`,
:mod:`.runner`, :mod:`.nikita`), each a ``run(ctx)`` on the shared :class:`~.context.Context`;
cluster health (who answers, who failed this pass) is in :mod:`.health`; the updator's black-hole detector
in :mod:`.blackhole`.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Sequence
from contextlib import contextmanager

from ..adapters import ResourceManager
from ..calls import Bounded
from ..clock import Clock
from ..config import Patience
from ..errors import Busy
from ..prediction import Predictor, predictor
from ..scheduling import MetaScheduler
from ..stages import RETRY, stage_remote, stage_retry
from ..store import Store
from . import metasched, nikita, runner, spritz, updator
from .context import Context, PassReport, job_slots
from .health import gather

STAGES = ("updator", "spritz", "metasched", "runner", "nikita")
RUNS: dict[str, Callable[[Context], None]] = {
    "updator": updator.run,
    "spritz": spritz.run,
    "metasched": metasched.run,
    "runner": runner.run,
    "nikita": nikita.run,
}

__all__ = [
    "RETRY",
    "STAGES",
    "Cycle",
    "PassReport",
    "Patience",
    "exclusive",
    "job_slots",
    "stage_remote",
    "stage_retry",
]


class Cycle:
    """The almighty: runs the stages of a pass in order on one shared context."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        scheduler: MetaScheduler | None = None,
        forecaster: Predictor | None = None,
        adapters: Callable[[str], ResourceManager] | None = None,
        patience: Patience | None = None,
        oracle: Callable[[int], float | None] | None = None,
        flow: str | None = None,
    ):
        """``scheduler`` decides for every cluster (``--policy``); without it, the configured strategies
        do (:func:`cigri.config.strategies`). ``flow`` names the flow strategy of every cluster (``--flow``,
        with its configured options); without it, the configured ones size the queues. ``oracle`` gives
        each campaign's true mean job duration as its estimate (the simulator's ``--oracle``), instead of
        what its terminated jobs took."""
        self.ctx = Context(
            store,
            clock,
            scheduler=scheduler,
            forecaster=forecaster or predictor(),
            adapters=adapters,
            patience=patience or Patience(),
            oracle=oracle,
            flow=flow,
        )

    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @property
    def report(self) -> PassReport:
        return self.ctx.report

    def adapter(self, name: str) -> Bounded:
        return self.ctx.adapter(name)

    def close(self) -> None:
        self.ctx.close()

    def run(self, stages: Sequence[str] = STAGES) -> PassReport:
        """One pass of the given stages, in the order given; what it did."""
        self.ctx.begin()
        for stage in stages:
            RUNS[stage](self.ctx)
        return self.ctx.report

    def news(self) -> bool:
        """Has a cluster changed since cigri last read it? (lets a looping almighty wake before its period;
        a cluster that fails to answer is no news: the next pass meets the failure and reports it)"""
        watched = [name for name, token in self.ctx.seen.items() if token is not None]
        tokens = gather(self.ctx, watched, "activity", report=False)
        return any(token != self.ctx.seen[name] for name, token in tokens.items())


@contextmanager
def exclusive(store: Store):
    """Hold the almighty lock of this state file: two passes never overlap."""
    path = store.directory / "almighty.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another almighty pass holds {path}; try again later") from None
        yield
    finally:
        os.close(fd)
