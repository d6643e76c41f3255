"""Data-parallel training started torchrun-style, written as a PyTorch program and run on numdiff.
Stands for pytorch/examples' distributed/ddp and ddp-tutorial-series (multigpu_torchrun.py): the
script reads LOCAL_RANK from the environment, joins with ``init_process_group(backend="gloo")``,
wraps its model in ``DistributedDataParallel``, splits the data with ``DistributedSampler``
(``set_epoch`` each epoch), saves a snapshot from rank 0 and resumes from it when restarted.

The test launches it twice with ``python -m numdiff.distributed.run --nproc-per-node 2``: the
first run trains two epochs, the second resumes at epoch 2 and trains to 4. Both ranks must end
with the same weights, and the loss must fall.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import numdiff as torch
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.distributed import destroy_process_group, init_process_group
from numdiff.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - the usual PyTorch spelling
from numdiff.utils.data import DataLoader, Dataset
from numdiff.utils.data.distributed import DistributedSampler

ROOT = Path(__file__).resolve().parents[2]


class LineDataset(Dataset):
    """y = x @ w_true + 0.5 with a little noise, the same on every rank."""

    def __init__(self, size: int):
        rng = np.random.default_rng(0)
        x = rng.standard_normal((size, 20)).astype(np.float32)
        w_true = rng.standard_normal((20, 1)).astype(np.float32)
        self.x, self.y = x, x @ w_true + 0.5 + 0.01 * rng.standard_normal((size, 1)).astype(np.float32)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int):
        return torch.from_numpy(self.x[index]), torch.from_numpy(self.y[index])


class Trainer:
    def __init__(self, model, train_data, optimizer, snapshot_path: str):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model, self.train_data, self.optimizer = model, train_data, optimizer
        self.snapshot_path, self.epochs_run = snapshot_path, 0
        if os.path.exists(snapshot_path):
            snapshot = torch.load(snapshot_path, map_location="cpu")
            self.model.load_state_dict(snapshot["MODEL_STATE"])
            self.epochs_run = snapshot["EPOCHS_RUN"]
            print(f"[rank {self.gpu_id}] resuming from epoch {self.epochs_run}", flush=True)
        self.model = DDP(self.model)

    def run_epoch(self, epoch: int) -> float:
        self.train_data.sampler.set_epoch(epoch)
        total = 0.0
        for source, targets in self.train_data:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(source), targets)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total / len(self.train_data)

    def train(self, max_epochs: int) -> None:
        for epoch in range(self.epochs_run, max_epochs):
            loss = self.run_epoch(epoch)
            print(f"[rank {self.gpu_id}] epoch {epoch} loss {loss:.6f}", flush=True)
            if self.gpu_id == 0:
                torch.save({"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch + 1},
                           self.snapshot_path)
        weights = self.model.module.weight.detach().numpy()
        print(f"[rank {self.gpu_id}] final weight checksum {float(np.abs(weights).sum()):.10f}", flush=True)


def main(total_epochs: int, snapshot_path: str) -> None:
    init_process_group(backend="gloo")
    torch.manual_seed(0)
    dataset, model = LineDataset(512), torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(dataset, batch_size=32, pin_memory=True, shuffle=False, sampler=DistributedSampler(dataset))
    Trainer(model, loader, optimizer, snapshot_path).train(total_epochs)
    destroy_process_group()


def _launch(epochs: int, snapshot: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "numdiff.distributed.run", "--nproc-per-node", "2", __file__, str(epochs), str(snapshot)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="mpiexec not found (pip install 'numdiff[distributed]')")
def test_ddp_job_trains_snapshots_and_resumes_with_ranks_in_step(tmp_path):
    pytest.importorskip("mpi4py")
    snapshot = tmp_path / "snapshot.pt"
    first = _launch(2, snapshot)
    assert first.returncode == 0, first.stderr[-2000:]
    second = _launch(4, snapshot)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "[rank 0] resuming from epoch 2" in second.stdout and "[rank 1] resuming from epoch 2" in second.stdout
    # The ranks share one stdout, so their lines may interleave: match the messages, not the lines.
    losses = [float(x) for x in re.findall(r"\[rank 0\] epoch \d+ loss (\d+\.\d{6})", first.stdout + second.stdout)]
    assert len(losses) == 4 and losses[-1] < 0.2 * losses[0]
    checksums = re.findall(r"final weight checksum (\d+\.\d{10})", second.stdout)
    assert len(checksums) == 2 and len(set(checksums)) == 1  # both ranks hold the same weights


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
