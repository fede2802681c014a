"""Bounded calls from the cycle into a cluster's adapter: one cluster's trouble stays that cluster's.

Every method call on a :class:`Bounded` adapter runs on a daemon thread of its own and is waited for at
most the cluster's timeout (its ``timeout`` option, else :data:`DEFAULT_TIMEOUT`) and :data:`GRACE`: the
adapters that bound their own requests by the same option report their own, more precise, cause first,
and an adapter that hangs all the same is still cut off. Whatever goes wrong
becomes an :class:`~cigri.errors.AdapterError` the cycle confines to that cluster:

- a call that does not answer in time is abandoned: its thread is a daemon (a cron pass still ends),
  the adapter it holds is closed when the call returns, and the next pass builds a fresh one, so no
  two threads ever share an adapter;
- an unexpected exception (a parser's KeyError...) is logged with its traceback and reported as an
  AdapterError naming it; a CigriError keeps its own words;
- after a failure the cluster is closed for the pass: later calls fail at once, with the same cause,
  until :meth:`Bounded.reopen` (the next pass).

A :class:`~cigri.errors.SubmitError` is an answer (the RM refused a batch), not a failure of the cluster.
Calls started with :meth:`Bounded.start` run concurrently; the cycle reads their results in a fixed order.
An adapter whose ``answers_at_once`` is true (the simulator's clusters) is called on the caller's thread, at
once (:class:`Answered`: no thread, no deadline).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .adapters import ResourceManager
from .adapters.transport import TIMEOUT as DEFAULT_TIMEOUT  # the adapters' own default: one figure
from .errors import AdapterError, CigriError, SubmitError, TransportError

log = logging.getLogger("cigri.calls")

GRACE = 1.0  # seconds past the cluster's timeout: an adapter that bounds its own calls says the cause first


def timeout_of(adapter: ResourceManager) -> float:
    """How long a call may take: the cluster's timeout option (or the default), and the grace."""
    config = getattr(adapter, "config", None) or {}
    return float(config.get("timeout") or DEFAULT_TIMEOUT) + GRACE


def key(method: str, args: tuple) -> tuple | None:
    """A call, as a dictionary key (lists of remote ids become tuples); None for arguments that cannot be one."""
    call = (method, *(tuple(arg) if isinstance(arg, list) else arg for arg in args))
    try:
        hash(call)
    except TypeError:
        return None
    return call


class Pending:
    """One call under way: :meth:`result` waits for it until its deadline."""

    def __init__(self, owner: Bounded, adapter: ResourceManager, what: str, call: Callable[[], Any]):
        self.owner, self.adapter, self.what = owner, adapter, what
        self.timeout = timeout_of(adapter)
        self.deadline = time.monotonic() + self.timeout
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.abandoned = False
        self.failure: AdapterError | None = None  # what result() raised, raised again if asked again
        self.lock = threading.Lock()
        threading.Thread(target=self._run, args=(call,), name=f"cigri-{owner.name}", daemon=True).start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self.value = call()
        except Exception as exc:  # handed to the waiting thread, which decides what it means
            self.error = exc
        with self.lock:
            self.done.set()
            late = self.abandoned
        if late:  # nobody else holds this adapter any more (see Bounded.abandon)
            log.info("%s: an abandoned call (%s) returned; its adapter is closed", self.owner.name, self.what)
            try:
                self.adapter.close()
            except Exception:  # a daemon thread: the log is the only place left to say it
                log.exception("%s: closing an abandoned adapter", self.owner.name)

    def result(self) -> Any:
        if self.failure is None:
            return self._result()
        raise self.failure

    def _result(self) -> Any:
        if not self.done.wait(max(0.0, self.deadline - time.monotonic())):
            with self.lock:
                self.abandoned = not self.done.is_set()
            if self.abandoned:
                self.owner.abandon()
                self.failure = self.owner.fail(
                    TransportError(f"{self.owner.name}: no answer within {self.timeout:g} s ({self.what})")
                )
                raise self.failure
        if self.error is None:
            return self.value
        self.failure = self.owner.fail(self.error)
        raise self.failure


class Answered:
    """A call made on the caller's thread (an adapter that answers at once): :meth:`result` is its answer,
    or the failure it means, raised again if asked again."""

    def __init__(self, owner: Bounded, call: Callable[[], Any]):
        self.owner = owner
        self.failure: AdapterError | None = None
        self.error: BaseException | None = None
        try:
            self.value = call()
        except Exception as exc:  # what it means is decided when the result is asked, as for a Pending call
            self.value, self.error = None, exc

    def result(self) -> Any:
        if self.error is None:
            return self.value
        if self.failure is None:
            self.failure = self.owner.fail(self.error)
        raise self.failure


class Bounded:
    """A cluster's adapter seen through bounded calls (attributes that are not methods read through)."""

    def __init__(self, name: str, factory: Callable[[str], ResourceManager]):
        self.name = name
        self.factory = factory
        self._inner: ResourceManager | None = None
        self.failure: AdapterError | None = None
        self._ahead: dict[tuple | None, Pending] = {}  # calls started ahead of the code that will make them

    def built(self) -> ResourceManager:
        """The adapter (built on first use, and again after a call was abandoned)."""
        if self._inner is None:
            self._inner = self.factory(self.name)
        return self._inner

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self.built(), attribute)
        if attribute.startswith("_") or not callable(value):
            return value
        return lambda *args: self.start(attribute, *args).result()

    def start(self, method: str, *args: Any) -> Pending | Answered:
        """Start ``method(*args)`` on the adapter (or take the same call started ahead); fails at once when
        the cluster is closed for the pass."""
        if self.failure is not None:
            raise self.failure
        ahead = self._ahead.pop(key(method, args), None) if self._ahead else None
        if ahead is not None:
            return ahead
        self._wait_ahead()  # one call at a time on an adapter: the calls started ahead end (or are abandoned) first
        if self.failure is not None:
            raise self.failure
        try:
            adapter = self.built()
        except Exception as exc:  # the adapter could not even be built from its configuration
            raise self.fail(exc) from exc
        call = getattr(adapter, method)
        if getattr(adapter, "answers_at_once", False):
            return Answered(self, lambda: call(*args))
        return Pending(self, adapter, method, lambda: call(*args))

    def concurrent(self) -> bool:
        """Do its calls run on threads of their own (so that starting one ahead gains something)?"""
        try:
            return not getattr(self.built(), "answers_at_once", False)
        except Exception:  # not built: the call itself meets (and reports) that failure
            return False

    def ahead(self, method: str, *args: Any) -> None:
        """Start ``method(*args)`` now, so that it runs while other clusters are asked: the next
        ``method(*args)`` takes its answer. A failure to start is met again by that call."""
        if not self.concurrent():
            return  # nothing to overlap, and the order of its calls stays the cycle's
        call = key(method, args)
        if call is not None:
            with contextlib.suppress(AdapterError):
                self._ahead[call] = self.start(method, *args)

    def _wait_ahead(self) -> None:
        """Wait for the calls started ahead (their answers stay to be taken); a failure is the cluster's."""
        for pending in self._ahead.values():
            with contextlib.suppress(AdapterError):
                pending.result()

    def fail(self, exc: BaseException) -> AdapterError:
        """What ``exc`` means for the cycle; anything but a refused submission closes the cluster for the pass."""
        if isinstance(exc, SubmitError):
            return exc
        if isinstance(exc, AdapterError):
            failure = exc
        elif isinstance(exc, CigriError):
            failure = AdapterError(str(exc))
        else:
            log.error("%s: unexpected error in its adapter", self.name, exc_info=exc)
            failure = AdapterError(f"{self.name}: unexpected {type(exc).__name__} in its adapter: {exc}")
        if failure is not exc:
            failure.__cause__ = exc
        self.failure = failure
        return failure

    def abandon(self) -> None:
        """A call did not answer in time: its thread keeps the adapter (and closes it when it returns);
        the next pass builds a fresh one."""
        self._inner = None

    def reopen(self) -> None:
        """A new pass: the cluster is tried again (and nothing is kept from the last one)."""
        self._wait_ahead()
        self._ahead.clear()
        self.failure = None

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None
