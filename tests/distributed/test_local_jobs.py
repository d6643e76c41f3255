"""Whole `mpiexec` jobs launched by the test: failures end the job, and the digits job trains."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MPIEXEC = shutil.which("mpiexec")
# The checkout's numdiff, whether or not it is the installed one.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (pip install 'numdiff[distributed]')")


def run_job(tmp_path, source: str, ranks: int = 2, timeout: float = 120) -> subprocess.CompletedProcess:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run(
        [MPIEXEC, "-n", str(ranks), sys.executable, str(script)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_rank_that_raises_mid_step_ends_the_whole_job_naming_its_rank(tmp_path):
    job = run_job(
        tmp_path,
        """
        import numdiff, numdiff.nn as nn, numdiff.distributed as dist
        from numdiff.nn.parallel import DistributedDataParallel
        dist.init_process_group("mpi")
        model = DistributedDataParallel(nn.Linear(3, 2))
        for step in range(3):
            if step == 1 and dist.get_rank() == 1:
                raise ValueError("bad batch on purpose")
            model(numdiff.randn(4, 3)).sum().backward()   # rank 0 would wait here forever
        """,
    )
    assert job.returncode != 0
    assert "rank 1 of 2 failed with ValueError: bad batch on purpose" in job.stderr


def test_a_collective_that_another_rank_never_joins_times_out(tmp_path):
    job = run_job(
        tmp_path,
        """
        import time, numdiff, numdiff.distributed as dist
        dist.init_process_group("mpi", timeout=2)
        if dist.get_rank() == 0:
            dist.all_reduce(numdiff.ones(3))
        else:
            time.sleep(60)
        """,
    )
    assert job.returncode != 0
    assert "rank 0 of 2 failed with DistributedTimeoutError: all_reduce: rank 0 waited 2 s" in job.stderr


def test_without_mpi4py_the_error_names_the_extra(tmp_path):
    code = "import sys; sys.modules['mpi4py'] = None\nimport numdiff.distributed as d\nd.init_process_group()"
    job = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert job.returncode != 0
    assert "pip install 'numdiff[distributed]'" in job.stderr


def test_the_digits_job_trains_data_parallel_and_checkpoints_from_rank_zero(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    checkpoint = tmp_path / "digits.npz"
    job = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, "examples/train_digits.py", "--distributed", "--epochs", "2",
         "--limit", "400", "--batch-size", "16", "--save", str(checkpoint)],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600,
    )
    assert job.returncode == 0, job.stderr[-2000:]
    assert "numdiff on 2 ranks: test accuracy" in job.stdout
    accuracy = float(job.stdout.split("test accuracy ")[1].split()[0])
    assert accuracy > 0.5  # 10 classes: chance is 0.1
    assert checkpoint.exists()


def test_cuda_tensors_reduce_through_host_memory_on_the_simulator(tmp_path):
    """CUDA tensors (here on Numba's simulator) are staged through the host: collectives and a DDP
    step give the same numbers as on the CPU."""
    pytest.importorskip("numba.cuda")
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(
        """
        import numpy as np, numdiff, numdiff.nn as nn, numdiff.distributed as dist
        from numdiff.nn.parallel import DistributedDataParallel
        dist.init_process_group("mpi")
        rank = dist.get_rank()
        t = numdiff.tensor([1.0, 2.0, 3.0], dtype=numdiff.float64, device="cuda") * (rank + 1)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert t.device.type == "cuda" and np.allclose(t.cpu().numpy(), [1.5, 3.0, 4.5])
        numdiff.manual_seed(rank)
        model = DistributedDataParallel(nn.Linear(3, 2).double().to("cuda"))
        x = numdiff.tensor(np.random.default_rng(rank).standard_normal((4, 3)), device="cuda")
        model(x).pow(2).mean().backward()
        grads = [p.grad.cpu() for p in model.parameters()]
        gathered = [[numdiff.zeros_like(g) for _ in range(2)] for g in grads]
        for g, out in zip(grads, gathered):
            dist.all_gather(out, g)
            assert np.array_equal(out[0].numpy(), out[1].numpy())
        # Every rank's gradient is the average of both ranks' local gradients, computed on the CPU.
        probe = nn.Linear(3, 2).double()
        probe.load_state_dict({k: v.cpu() for k, v in model.module.state_dict().items()})
        for r in range(2):
            xr = numdiff.tensor(np.random.default_rng(r).standard_normal((4, 3)))
            (probe(xr).pow(2).mean() / 2).backward()
        for g, p in zip(grads, probe.parameters()):
            assert np.allclose(g.numpy(), p.grad.numpy(), rtol=1e-12), (g, p.grad)
        if rank == 0:
            print("cuda ok")
        """
    ))
    job = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, str(script)],
        cwd=ROOT, env={**ENV, "NUMBA_ENABLE_CUDASIM": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert "cuda ok" in job.stdout
