"""Staged copies and gathered outputs are their owner's only: folders 0700 and files 0600 whatever the umask,
on this machine (the local cluster's cache, every gathered output) and on a cluster (the staging script runs
under ``umask 077``). The tests run under umask 000, where anything not made private is open to all."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from cigri.adapters.files import LocalFiles
from cigri.errors import AdapterError
from cigri.model import DataFile

from .conftest import write_jdl
from .test_file_access import Through


@pytest.fixture
def open_umask():
    previous = os.umask(0)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def modes(top: Path, below: Path) -> dict[str, int]:
    """The mode of ``below`` and of each folder between ``top`` (excluded) and it, by their path under ``top``."""
    out, path = {}, below
    while path != top:
        out[path.relative_to(top).as_posix()] = mode(path)
        path = path.parent
    return out


class Here(LocalFiles):
    """The local clusters' file moves (their adapter's), with this folder as home."""

    name = "here"

    def __init__(self, home: Path):
        self.home, self.config = str(home), {}


def source_file(tmp_path: Path) -> tuple[Path, DataFile]:
    source = tmp_path / "in.bin"
    source.write_bytes(b"input bytes\n" * 100)
    return source, DataFile("sub/in.bin", 1200, hashlib.sha256(source.read_bytes()).hexdigest())


@pytest.mark.parametrize("files", [Here, Through], ids=["local", "through_a_command_runner"])
def test_a_staged_copy_and_its_folders_are_private_whatever_the_umask(tmp_path, open_umask, files):
    source, expected = source_file(tmp_path)
    target = tmp_path / "cache" / "a1b2c3d4" / "7" / "sub" / "in.bin"
    assert files(tmp_path).put_file(source, str(target), expected) == expected.sha256
    assert modes(tmp_path, target) == {
        "cache": 0o700,
        "cache/a1b2c3d4": 0o700,
        "cache/a1b2c3d4/7": 0o700,
        "cache/a1b2c3d4/7/sub": 0o700,
        "cache/a1b2c3d4/7/sub/in.bin": 0o600,
    }


@pytest.mark.parametrize("files", [Here, Through], ids=["local", "through_a_command_runner"])
def test_a_copy_staged_again_over_an_open_one_is_private(tmp_path, open_umask, files):
    """Copies (and a partial one) left by a cigri that made them 0644 are replaced by private ones."""
    source, expected = source_file(tmp_path)
    target = tmp_path / "cache" / "in.bin"
    target.parent.mkdir(mode=0o700)
    for stale in (target, target.with_name("in.bin.part")):
        stale.write_bytes(b"old")
        stale.chmod(0o644)
    files(tmp_path).put_file(source, str(target), expected)
    assert mode(target) == 0o600 and target.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("files", [Here, Through], ids=["local", "through_a_command_runner"])
def test_a_gathered_output_and_the_folders_made_for_it_are_private(tmp_path, open_umask, files):
    output = tmp_path / "work" / "out.txt"
    output.parent.mkdir()
    output.write_text("result\n")
    target = tmp_path / "results" / "job1" / "sub" / "out.txt"
    assert files(tmp_path).get_file(str(output), target) == hashlib.sha256(b"result\n").hexdigest()
    assert modes(tmp_path, target) == {
        "results": 0o700,
        "results/job1": 0o700,
        "results/job1/sub": 0o700,
        "results/job1/sub/out.txt": 0o600,
    }


def test_a_link_where_a_copy_goes_is_not_followed(tmp_path):
    """A link planted at a partial copy's name would send the bytes elsewhere: the copy fails instead."""
    source, expected = source_file(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"")
    target = tmp_path / "cache" / "in.bin"
    target.parent.mkdir()
    target.with_name("in.bin.part").symlink_to(elsewhere)
    with pytest.raises(AdapterError, match="cannot stage"):
        Here(tmp_path).put_file(source, str(target), expected)
    assert elsewhere.read_bytes() == b""


CHECKER = """#!/bin/sh
# what the job sees of its staged input: the modes of its folder and of its file
stat -c %a "$CIGRI_INPUT_DIR" "$CIGRI_INPUT_DIR/in.dat" > "out_$1.txt"
"""


def test_a_campaign_stages_private_copies_and_gathers_private_outputs(cli, tmp_path, open_umask):
    checker = tmp_path / "checker.sh"
    checker.write_text(CHECKER)
    checker.chmod(0o755)
    data, work, results = tmp_path / "data", tmp_path / "work", tmp_path / "results"
    data.mkdir()
    work.mkdir()
    (data / "in.dat").write_text("input\n")
    cli("gridclusters", "set", "local", "--cache-dir", str(tmp_path / "cache"))
    cid = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(checker),
            exec_directory=str(work),
            params=["j"],
            data_source=str(data),
            input_files="in.dat",
            output_file="out_{1}.txt",
            output_destination=str(results),
        )
    )
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["done"] == 1
    gathered = results / "j" / "out_j.txt"
    assert gathered.read_text().split() == ["700", "600"]
    assert modes(tmp_path, gathered) == {"results": 0o700, "results/j": 0o700, "results/j/out_j.txt": 0o600}
    assert mode(tmp_path / "cache") == 0o700
