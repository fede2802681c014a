"""Secrets are never shown: wherever cigri prints, logs or keeps a text for display (the saved JDL, events,
errors, ``gridclusters``, ``grid config show``, ``--json``), these read ``***``:

- the value of a key whose name says it holds a secret (in a JDL's ``environment``, a cluster's configuration,
  the state's settings), as a mapping's value or as ``NAME=value`` or ``"name": "value"`` in a text, however
  the value is quoted. A name says so when it holds ``token``, ``secret``, ``passw`` (password, passwd),
  ``passphrase``, ``credential``, ``apikey`` or ``jwt`` anywhere, or when one of its parts is ``pass``,
  ``pwd``, ``key`` or ``keys`` (parts: the name cut at ``_``, ``.``, ``-`` and where a lower-case letter
  meets an upper-case one, so ``DB_PASS``, ``apiKey`` and ``AWS_SECRET_ACCESS_KEY`` are secrets, ``keyboard``
  and ``BYPASS`` are not);
- the password of a URL (``https://user:password@host``), a bearer token and a JWT;
- in a campaign's messages (its jobs' error events, the errors of its submissions), the values of its JDL's
  ``environment`` wherever they appear, named or not, as they are or quoted for a shell: the values of the
  variables whose names say they are secrets (from 3 characters), and every other value of at least 8
  characters (a shorter one, ``4`` or ``fast``, is a setting whose masking would hide common words).

A ``*_file`` option (``token_file``, ``key_file``) holds a path, not the secret: it is shown. The jobs still
get their environment's real values (kept, 0600, in the campaign's cluster settings that run them), and never
through a command line (:mod:`cigri.adapters`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .errors import CigriError

MASK = "***"
SECRET_WORDS = ("token", "secret", "passw", "passphrase", "credential", "apikey", "jwt")  # anywhere in a name
SECRET_PARTS = ("pass", "pwd", "key", "keys")  # a whole part of a name: too short to be looked for anywhere
MIN_SECRET = 3  # characters of a secret-named value masked wherever it appears (shorter: no secret at all)
MIN_VALUE = 8  # characters of any other environment value masked wherever it appears

_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")  # the parts of a name, once cut at _ . -
_NAME = r"[A-Za-z_][\w.-]*"
# a value as a shell, a log or an error writes it: quoted pieces (a quote left open runs to the end: a line
# cut short), escaped characters and plain ones, up to a blank
_VALUE = r"""(?:'[^']*'?|"(?:[^"\\]|\\.)*"?|\\.|[^\s"'\\])+"""
# NAME=value; a name starts where its word does, or after an option's dashes (so that the text is read once)
_ASSIGNED = re.compile(rf"(?<![\w.])(?<!\w-)({_NAME})=({_VALUE})")
_KEYED = re.compile(rf"""(["'])({_NAME})\1(\s*:\s*)(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")  # "name": "value"
_IN_TEXT = [
    # a URL's password (its scheme starts where its run of scheme characters does: the text is read once)
    (re.compile(r"((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@", re.IGNORECASE), rf"\g<1>{MASK}@"),
    (re.compile(r"(\bBearer\s+)\S+", re.IGNORECASE), rf"\g<1>{MASK}"),
    (re.compile(r"\beyJ[\w-]*\.[\w-]+\.[\w-]*"), MASK),  # a JWT (its header always starts so)
]


def is_secret(name: str) -> bool:
    """Whether a key's value is a secret (a ``*_file`` key holds a path, not one): see the module's docstring."""
    if name.lower().endswith("_file"):
        return False
    parts = [part.lower() for piece in re.split(r"[_.\-\s]+", name) for part in _PARTS.findall(piece)]
    return any(word in name.lower() for word in SECRET_WORDS) or any(part in SECRET_PARTS for part in parts)


def mask(value: Any) -> Any:
    """``value`` (mappings and lists walked) with the values of secret keys and the secrets in texts masked."""
    if isinstance(value, dict):
        return {k: MASK if isinstance(k, str) and is_secret(k) and _may_hide(v) else mask(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(mask(v) for v in value)
    if isinstance(value, str):
        return mask_text(value)
    return value


def _may_hide(value: Any) -> bool:
    """Whether a secret-named key's value may be a secret: a text or a whole number (a PIN, a password YAML
    read as a number), not a fraction, a flag or nothing (``mean_pass_seconds``: a pass is also a cycle's)."""
    return not isinstance(value, bool | float) and value is not None


def mask_text(text: str) -> str:
    """``text`` with URL passwords, bearer tokens, JWTs and the values of secret names masked."""
    for pattern, replacement in _IN_TEXT:
        text = pattern.sub(replacement, text)
    text = _ASSIGNED.sub(lambda m: f"{m.group(1)}={MASK}" if is_secret(m.group(1)) else m.group(0), text)
    return _KEYED.sub(_keyed, text)


def _keyed(match: re.Match) -> str:
    """``"name": "value"`` with the value masked when the name is a secret's."""
    quote, name, colon = match.groups()
    return f'{quote}{name}{quote}{colon}"{MASK}"' if is_secret(name) else match.group(0)


def secret_values(environment: Mapping[str, str]) -> list[str]:
    """The values of a JDL's ``environment`` masked in its campaign's messages (see the module's docstring)."""
    return [
        value for name, value in environment.items() if len(value) >= (MIN_SECRET if is_secret(name) else MIN_VALUE)
    ]


def mask_values(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` masked wherever it appears, as it is or quoted for a shell (the longest
    first: a value holding another is masked whole)."""
    forms = {form for value in values if value for form in (shlex.quote(value), value)}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return text


@contextmanager
def masked_errors(values: Iterable[str]) -> Iterator[None]:
    """A CigriError raised inside has ``values`` masked in its message (see :func:`mask_values`). Masked in
    place, so that its class, cause and traceback stay: the error becomes an event, a log line, a line on
    stderr, which others than the owner of the values read."""
    try:
        yield
    except CigriError as exc:
        exc.args = (mask_values(str(exc), list(values)),)
        raise
