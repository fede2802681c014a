"""Run a piece of a test as a real second Unix user (``nobody``): in a forked child whose groups, gid and uid
are dropped before it runs, never returning into pytest. The tests that use it need root (require_root)."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Callable
from pathlib import Path

import httpx


def as_user(work: Callable[[], bytes], name: str = "nobody") -> tuple[int, bytes]:
    """(exit code, bytes) of ``work`` run with ``name``'s rights in a forked child; the exit code is 0 when it
    returned, 99 when it raised (its bytes are then what it wrote before)."""
    user = pwd.getpwnam(name)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os.write(write, work())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), b"".join(chunks)


def requests_as_nobody(sock: Path, calls: list[tuple[str, str, dict]]) -> list[tuple[int, dict]]:
    """(status, JSON body) of each (method, path, httpx keyword arguments) request that ``nobody`` makes over
    the service's Unix socket (the kernel names the peer)."""

    def work() -> bytes:
        out = []
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)), base_url="http://cigri") as client:
            for method, path, options in calls:
                answer = client.request(method, path, **options)
                out.append((answer.status_code, answer.json()))
        return json.dumps(out).encode()

    code, answers = as_user(work)
    assert code == 0
    return [tuple(item) for item in json.loads(answers)]
