"""Input files staged through ssh into the real Slurm's cache, read by its jobs, outputs gathered back and the
cache emptied: on slurm-ssh, on slurm-rest through its ssh (--host), and the same campaign on the local cluster
(issue 13 item 7)."""

from __future__ import annotations

import hashlib

import pytest

from .conftest import write_jdl
from .slurm import rest_cluster_options, ssh_cluster_options

pytestmark = pytest.mark.slurm

READER = """#!/bin/sh
name=$1; chunk=$2
cat "$CIGRI_INPUT_DIR/chunk_$chunk.dat" "$CIGRI_INPUT_DIR/common.dat" | sha256sum | cut -d' ' -f1 > "out_$name.txt"
"""


def test_jobs_on_slurm_and_local_read_staged_files_and_their_outputs_come_back(cli, slurm, shared_dir, tmp_path):
    data = shared_dir / "data"
    data.mkdir()
    for i in range(2):
        (data / f"chunk_{i}.dat").write_bytes(bytes(range(256)) * (20 + i))  # binary, not text
    (data / "common.dat").write_bytes(b"\0shared\n" * 50)
    reader = shared_dir / "reader.sh"
    reader.write_text(READER)
    reader.chmod(0o755)
    cli("gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    rest = rest_cluster_options(slurm, tmp_path / "token")
    cli("gridclusters", "add", "rest", "--adapter", "slurm-rest", *rest, "--output-dir", str(shared_dir))
    clusters = ("slurm", "rest", "local")
    for cluster in clusters:
        cli("gridclusters", "set", cluster, "--cache-dir", str(shared_dir / f"{cluster}-cache"))
    work = {}
    for cluster in clusters:
        work[cluster] = shared_dir / cluster
        work[cluster].mkdir(mode=0o777)
        work[cluster].chmod(0o777)
        cli.submit(
            write_jdl(
                shared_dir,
                name=f"read-{cluster}",
                exec_file=str(reader),
                exec_directory=str(work[cluster]),
                params=["a 0", "b 1", "c 0"],
                data_source=str(data),
                input_files=["chunk_{2}.dat", "common.dat"],
                output_file="out_{1}.txt",
                output_destination=str(shared_dir / f"results-{cluster}"),
                clusters={cluster: {}},
            )
        )
    cli.until_done(timeout=120)
    assert [c["done"] for c in cli.json("gridstat")] == [3, 3, 3]
    for cluster in clusters:
        for name, chunk in (("a", 0), ("b", 1), ("c", 0)):
            both = (data / f"chunk_{chunk}.dat").read_bytes() + (data / "common.dat").read_bytes()
            gathered = shared_dir / f"results-{cluster}" / name / f"out_{name}.txt"
            assert gathered.read_text().strip() == hashlib.sha256(both).hexdigest(), (cluster, name)
        cache = shared_dir / f"{cluster}-cache"
        assert [p for p in cache.rglob("*") if p.is_file()] == []  # deleted once no job needed them
    assert cli.json("gridevents", "--all") == []
