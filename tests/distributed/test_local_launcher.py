"""torchrun's command line (`python -m numdiff.distributed.run`) and PyTorch's backend names.

PyTorch programs for CPUs say backend="gloo" and are started by torchrun, reading RANK and
WORLD_SIZE from the environment (pytorch/examples distributed/ddp, ddp-tutorial-series).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import numdiff.distributed as dist
from numdiff.distributed import run

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
needs_mpiexec = pytest.mark.skipif(shutil.which("mpiexec") is None, reason="mpiexec not found")


@pytest.mark.parametrize("name", ["gloo", "NCCL", "mpi", "cpu:gloo,cuda:nccl", None])
def test_pytorch_backend_names_are_accepted(name):
    from numdiff.distributed._backends import resolve_backend

    assert resolve_backend("init_process_group", name) == (name or "mpi").lower()


@pytest.mark.parametrize("name", ["ucc", "tcp", "cpu:nccl2", "tpu:gloo"])
def test_unknown_backend_names_are_refused_listing_the_accepted_ones(name):
    with pytest.raises(ValueError, match=rf"init_process_group: backend '{name}' is not available.*'gloo'"):
        dist.init_process_group(backend=name)


def test_backend_constants_and_device_defaults_follow_pytorch():
    assert dist.Backend("GLOO") == dist.Backend.GLOO == "gloo"
    assert dist.get_default_backend_for_device("cpu") == "gloo"
    assert dist.get_default_backend_for_device("cuda:1") == "nccl"
    with pytest.raises(ValueError, match="no backend for device 'xpu'"):
        dist.get_default_backend_for_device("xpu")
    assert dist.is_gloo_available() == dist.is_nccl_available() == dist.is_mpi_available() == dist.is_available()


def test_launcher_reads_torchrun_arguments_and_builds_the_mpiexec_line():
    args = run.parse_args(["--nproc_per_node=3", "--standalone", "train.py", "--epochs", "1"])
    assert run.command(args, "mpiexec") == [
        "mpiexec", "-n", "3", sys.executable, "-m", "numdiff.distributed._launched", "train.py", "--epochs", "1"]
    module = run.parse_args(["--nproc-per-node", "2", "-m", "pkg.train"])
    assert run.command(module, "mpiexec")[-2:] == ["-m", "pkg.train"]


@pytest.mark.parametrize("argv, message", [
    (["--nproc-per-node", "0", "t.py"], "--nproc-per-node must be a positive integer, 'cpu' or 'auto', got '0'"),
    (["--nproc-per-node", "two", "t.py"], "got 'two'"),
    (["--nnodes", "2", "t.py"], "--nnodes 2 is not supported; for several machines"),
])
def test_launcher_refuses_what_it_cannot_do_saying_what_to_do(argv, message):
    with pytest.raises(SystemExit, match=message):
        run.parse_args(argv)


@needs_mpiexec
def test_a_torchrun_style_gloo_program_runs_on_two_ranks(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(
        """
        import os, sys, numdiff, numdiff.distributed as dist
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        assert os.environ["LOCAL_RANK"] == str(rank) and os.environ["LOCAL_WORLD_SIZE"] == "2"
        assert dist.is_torchelastic_launched()
        dist.init_process_group(backend="gloo")
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (rank, world, "gloo")
        t = numdiff.ones(2) * (rank + 1)
        dist.all_reduce(t)
        print(f"rank {rank} of {world} args {sys.argv[1:]} sum {t.tolist()}")
        dist.destroy_process_group()
        """
    ))
    job = subprocess.run(
        [sys.executable, "-m", "numdiff.distributed.run", "--nproc-per-node", "2", str(script), "--flag", "x"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=240,
    )
    assert job.returncode == 0, job.stderr[-2000:]
    for rank in (0, 1):
        assert f"rank {rank} of 2 args ['--flag', 'x'] sum [3.0, 3.0]" in job.stdout
