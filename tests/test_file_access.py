"""Moving files to and from clusters (cigri.adapters.files): through a command runner in blocks of base64,
checksums computed on the cluster side; and a damaged copy found."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from cigri.adapters import files
from cigri.adapters.transport import LocalRunner
from cigri.errors import AdapterError
from cigri.model import DataFile


class Through(files.RemoteFiles):
    """RemoteFiles over a LocalRunner: the same shell steps an ssh cluster runs."""

    name = "remote"
    unreachable = re.compile("never")

    def __init__(self, home: str, **config):
        self.runner, self.home, self.config = LocalRunner(), home, config

    def _run(self, argv, *, input=None):
        result = self.runner.run(argv, input=input)
        self.answered = [*getattr(self, "answered", []), len(result.stdout)]
        return result


def test_a_file_travels_in_blocks_and_its_checksum_is_the_clusters(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "BLOCK", 1000)
    source = tmp_path / "in.bin"
    source.write_bytes(os.urandom(3500))  # four blocks, binary
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    remote = Through(str(tmp_path), cache_dir="~/cache")
    target = f"{remote.cache_dir()}/7/sub/in.bin"
    assert remote.cache_dir() == f"{tmp_path}/cache"
    assert remote.put_file(source, target, DataFile("sub/in.bin", 3500, sha)) == sha
    assert Path(target).read_bytes() == source.read_bytes() and not Path(f"{target}.part").exists()
    back = tmp_path / "back" / "in.bin"
    assert remote.get_file(target, back) == sha and back.read_bytes() == source.read_bytes()
    assert remote.get_file(f"{tmp_path}/nothing", tmp_path / "x") is None
    remote.remove_paths([target])
    assert not Path(target).exists()


def test_an_empty_file_is_staged_too(tmp_path):
    source = tmp_path / "empty"
    source.write_bytes(b"")
    remote = Through(str(tmp_path))
    target = f"{tmp_path}/c/empty"
    assert remote.put_file(source, target, DataFile("empty", 0, "")) == hashlib.sha256(b"").hexdigest()
    assert Path(target).exists()


def test_a_cluster_side_failure_is_an_adapter_error_naming_the_file(tmp_path):
    (tmp_path / "blocker").write_text("a file where a folder should be")
    source = tmp_path / "in"
    source.write_text("x")
    with pytest.raises(AdapterError, match=r"remote: cannot stage .*blocker/in"):
        Through(str(tmp_path)).put_file(source, f"{tmp_path}/blocker/in", DataFile("in", 1, ""))


def test_an_output_comes_back_in_blocks_never_whole_in_memory(tmp_path, monkeypatch):
    """A job's output may be larger than cigri's memory: each command brings one block of it (as put_file
    sends one), and the copy is written block by block, under its name only once whole."""
    monkeypatch.setattr(files, "BLOCK", 1000)
    output = tmp_path / "out.bin"
    output.write_bytes(os.urandom(3500))
    remote = Through(str(tmp_path))
    back = tmp_path / "back" / "out.bin"
    assert remote.get_file(str(output), back) == hashlib.sha256(output.read_bytes()).hexdigest()
    assert back.read_bytes() == output.read_bytes() and list(back.parent.iterdir()) == [back]
    assert len(remote.answered) == 5 and max(remote.answered) <= 1400  # a head, then four blocks of base64
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert remote.get_file(str(empty), tmp_path / "back" / "empty") == hashlib.sha256(b"").hexdigest()
    assert (tmp_path / "back" / "empty").read_bytes() == b""


def test_an_output_read_fails_midway_leaves_no_partial_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "BLOCK", 1000)
    output = tmp_path / "out.bin"
    output.write_bytes(os.urandom(3500))
    remote = Through(str(tmp_path))
    real = remote.runner.run

    def failing(argv, *, input=None):  # the cluster goes away after the second block
        if len(getattr(remote, "answered", [])) >= 3:
            output.unlink(missing_ok=True)
        return real(argv, input=input)

    monkeypatch.setattr(remote.runner, "run", failing)
    with pytest.raises(AdapterError, match=r"remote: cannot read .*out.bin"):
        remote.get_file(str(output), tmp_path / "back" / "out.bin")
    assert list((tmp_path / "back").iterdir()) == []
