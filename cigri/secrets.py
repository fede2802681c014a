"""Secrets are never shown: values whose key names a token, a password, a secret or a key (in a JDL's
``environment``, a cluster's configuration, the state's settings), the password of a URL
(``https://user:password@host``), a bearer token and a JWT read ``***`` wherever cigri prints, logs or keeps
them for display (the saved JDL, events, errors, ``gridclusters``, ``grid config show``, ``--json``).

A ``*_file`` option (``token_file``, ``key_file``) holds a path, not the secret: it is shown. The jobs still
get their environment's real values (kept, 0600, in the campaign's cluster settings that run them).
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
_SECRET_NAME = re.compile(r"token|passw|secret|credential|apikey|(?:^|[_.-])key(?:$|[_.-])", re.IGNORECASE)
_NAMED = r"[\w.-]*(?:token|passw|secret|apikey)[\w.-]*"  # a name in a text that says it holds a secret
_IN_TEXT = [
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@", re.IGNORECASE), rf"\g<1>{MASK}@"),  # url password
    (re.compile(r"(\bBearer\s+)\S+", re.IGNORECASE), rf"\g<1>{MASK}"),
    (re.compile(r"\beyJ[\w-]*\.[\w-]+\.[\w-]*"), MASK),  # a JWT (its header always starts so)
    (re.compile(rf"({_NAMED}=)[^\s\"',;}}]+", re.IGNORECASE), rf"\g<1>{MASK}"),  # NAME=value
    (re.compile(rf"([\"']{_NAMED}[\"']\s*:\s*[\"'])[^\"']+", re.IGNORECASE), rf"\g<1>{MASK}"),  # "name": "value"
]


def is_secret(name: str) -> bool:
    """Whether a key's value is a secret (a ``*_file`` key holds a path, not one)."""
    return bool(_SECRET_NAME.search(name)) and not name.lower().endswith("_file")


def mask(value: Any) -> Any:
    """``value`` (mappings and lists walked) with the values of secret keys and the secrets in texts masked."""
    if isinstance(value, dict):
        return {k: MASK if isinstance(k, str) and is_secret(k) else mask(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(mask(v) for v in value)
    if isinstance(value, str):
        return mask_text(value)
    return value


def mask_text(text: str) -> str:
    """``text`` with URL passwords, bearer tokens, JWTs and ``name=value`` secrets masked."""
    for pattern, replacement in _IN_TEXT:
        text = pattern.sub(replacement, text)
    return text
