"""A rank that leaves the job (returns, calls sys.exit, is interrupted, raises) makes the others
fail in every collective with an error naming it, instead of waiting for the timeout.

Each job sets a 10-minute collective timeout and runs under a subprocess timeout well below the
sum of the collectives' timeouts, so only departure detection can end it in time."""

from __future__ import annotations

import pytest

from tests.distributed.test_local_jobs import run_job

pytestmark = pytest.mark.skipif(pytest.importorskip("shutil").which("mpiexec") is None, reason="mpiexec not found")

SURVIVOR = """
import os, sys, signal, time
import numdiff, numdiff.nn as nn, numdiff.distributed as dist
from numdiff.nn.parallel import DistributedDataParallel
from numdiff.distributed.nn.functional import all_reduce as differentiable_all_reduce

HOW, LEAVER, REPORTS = {how!r}, {leaver}, {reports!r}
dist.init_process_group("mpi", timeout=600)
rank, world = dist.get_rank(), dist.get_world_size()
report = open(os.path.join(REPORTS, f"rank{{rank}}.txt"), "w")  # one file a rank: mpiexec may splice long lines
numdiff.manual_seed(0)
model = DistributedDataParallel(nn.Linear(3, 2))  # built by every rank, before one leaves
if rank == LEAVER:
    if HOW == "exit":
        sys.exit(3)
    if HOW == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
    if HOW == "raise_caught_then_return":
        try:
            raise ValueError("handled")
        except ValueError:
            pass
else:
    x = numdiff.ones(4)
    collectives = {{
        "all_reduce": lambda: dist.all_reduce(x),
        "async all_reduce": lambda: dist.all_reduce(x, async_op=True).wait(),
        "broadcast": lambda: dist.broadcast(x, src=LEAVER),
        "all_gather": lambda: dist.all_gather([numdiff.zeros(4) for _ in range(world)], x),
        "reduce_scatter": lambda: dist.reduce_scatter(numdiff.zeros(4), [x] * world),
        "reduce": lambda: dist.reduce(x, dst=0),
        "barrier": lambda: dist.barrier(),
        "DDP bucketed all_reduce": lambda: model(numdiff.ones(5, 3)).sum().backward(),
        "DDP construction": lambda: DistributedDataParallel(nn.Linear(2, 2)),
        "differentiable all_reduce": lambda: differentiable_all_reduce(x),
        "SyncBatchNorm": lambda: nn.SyncBatchNorm(4).train()(numdiff.ones(3, 4)),
    }}
    for name, call in collectives.items():
        try:
            call()
            print(f"rank {{rank}}: {{name}} COMPLETED", file=report, flush=True)
        except dist.RankDepartedError as error:
            print(f"rank {{rank}}: {{name}} refused: {{error}}", file=report, flush=True)
report.close()
"""


def survivor_job(tmp_path, how: str, leaver: int, ranks: int):
    """Runs SURVIVOR and returns the job and a function giving one rank's report lines."""
    job = run_job(tmp_path, SURVIVOR.format(how=how, leaver=leaver, reports=str(tmp_path)), ranks=ranks, timeout=240)

    def lines_of(rank: int) -> list[str]:
        path = tmp_path / f"rank{rank}.txt"
        return path.read_text().splitlines() if path.exists() else []

    return job, lines_of


@pytest.mark.parametrize(
    "how, reason",
    [
        ("return", "it ended (returned from its script or called sys.exit)"),
        ("exit", "it ended (returned from its script or called sys.exit)"),
        ("interrupt", "it was interrupted (KeyboardInterrupt)"),
        ("raise_caught_then_return", "it ended"),
    ],
)
def test_survivors_fail_every_collective_naming_the_rank_that_left(tmp_path, how, reason):
    job, lines_of = survivor_job(tmp_path, how, leaver=1, ranks=2)
    lines = lines_of(0)
    assert len(lines) == 11, job.stdout + job.stderr[-3000:]
    for line in lines:
        assert "refused" in line and f"rank 1 of 2 left the job: {reason}" in line, line


def test_with_three_ranks_both_survivors_name_the_rank_that_left(tmp_path):
    job, lines_of = survivor_job(tmp_path, "exit", leaver=2, ranks=3)
    for survivor in (0, 1):
        lines = lines_of(survivor)
        assert len(lines) == 11, job.stdout + job.stderr[-3000:]
        for line in lines:
            if survivor != 0 and line.startswith(f"rank {survivor}: reduce COMPLETED"):
                continue  # a non-root's part of reduce ends once its data is sent: MPI's semantics
            assert "refused" in line and "rank 2 of 3 left the job" in line, line


def test_a_rank_that_raises_still_aborts_the_job_naming_itself(tmp_path):
    job = run_job(
        tmp_path,
        """
        import numdiff, numdiff.distributed as dist
        dist.init_process_group("mpi", timeout=600)
        if dist.get_rank() == 1:
            raise ValueError("bad batch")
        dist.all_reduce(numdiff.ones(3))
        """,
        timeout=300,
    )
    assert job.returncode != 0
    assert "rank 1 of 2 failed with ValueError: bad batch" in job.stderr


def test_ranks_that_all_end_normally_exit_cleanly(tmp_path):
    job = run_job(
        tmp_path,
        """
        import numdiff, numdiff.distributed as dist
        dist.init_process_group("mpi")
        t = numdiff.ones(3)
        dist.all_reduce(t)
        if dist.get_rank() == 0:
            print("sum", t.tolist())
        """,
        timeout=300,
    )
    assert job.returncode == 0, job.stderr[-2000:]
    assert "sum [2.0, 2.0, 2.0]" in job.stdout
