"""The one exception tree of cigri.

Every error a user can cause or meet is a :class:`CigriError`. The CLI root turns it into one line on
stderr and the class's ``exit_code``; nothing else in the library prints or exits.

::

    CigriError                 1   anything cigri refuses or cannot do
    ├── JdlError               3   a JDL or param file is wrong (the message names the key path)
    ├── ConfigError            4   a cluster or option is misconfigured (unknown name, bad value)
    ├── NotFound               5   no such campaign, job, event or cluster
    ├── PermissionDenied       6   the campaign, or the state file, belongs to another user
    ├── StoreError             7   the state file cannot be opened or migrated
    ├── Inconsistent          11   grid admin check found the state's invariants broken
    ├── TimedOut              12   almighty --until-done --timeout ran out before the campaigns ended
    ├── Blocked               13   almighty --until-done stopped on campaigns that wait for their user
    ├── Busy                  75   another almighty pass holds the lock (EX_TEMPFAIL: retry later)
    └── AdapterError           8   a resource manager answered with an error
        ├── TransportError     9   the cluster could not be reached (ssh, HTTP, process)
        └── SubmitError       10   the resource manager rejected a submission

Usage mistakes (click's, and the options missing or in conflict that commands check) exit with 2.
"""

from __future__ import annotations


class CigriError(Exception):
    exit_code = 1


class JdlError(CigriError):
    exit_code = 3

    def __init__(self, path: str, message: str):
        self.path = path
        shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in path)
        super().__init__(f"{shown}: {message}" if path else message)  # keys may hold line breaks: shown escaped


class ConfigError(CigriError):
    exit_code = 4


class NotFound(CigriError):
    exit_code = 5


class PermissionDenied(CigriError):
    exit_code = 6


class StoreError(CigriError):
    exit_code = 7


class Inconsistent(CigriError):
    exit_code = 11


class TimedOut(CigriError):
    exit_code = 12


class Blocked(CigriError):
    exit_code = 13


class Busy(CigriError):
    exit_code = 75


class AdapterError(CigriError):
    exit_code = 8


class TransportError(AdapterError):
    exit_code = 9


class SubmitError(AdapterError):
    exit_code = 10
