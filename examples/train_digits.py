"""Train a small CNN on scikit-learn's 8x8 digits with numdiff, and the same model with PyTorch.

    python examples/train_digits.py                      # numdiff, then PyTorch for comparison
    python examples/train_digits.py --epochs 5 --no-torch --save digits.ckpt
    mpiexec -n 2 python examples/train_digits.py --distributed   # data-parallel on 2 processes
    python examples/train_digits.py --compile            # numdiff.compile(model) against PyTorch eager

The training code is plain PyTorch code: every function takes the library as `torch` (numdiff,
or PyTorch itself), so numdiff runs exactly what a PyTorch user would write. Both runs start
from the same weights (numdiff's initialisation copied into the PyTorch model) and see the
same batches in the same order; the script prints the first-step time (JIT compilation or
cache loading included), the time per epoch and the numdiff/PyTorch epoch-time ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
sys.path.insert(1, str(Path(__file__).resolve().parent))  # the --distributed driver beside this file

import numdiff  # noqa: E402


def load_data(seed: int, limit: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits as float32 images (N, 1, 8, 8) in [0, 1] and int64 labels; stratified 25% test split.

    `limit` keeps only the first `limit` training samples (for quick checks).
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.25, stratify=labels, random_state=seed
    )
    if limit is not None:
        x_train, y_train = x_train[:limit], y_train[:limit]
    return x_train, y_train, x_test, y_test


def build_model(torch: ModuleType) -> Any:
    """Conv(1->16) ReLU MaxPool, Conv(16->32) ReLU MaxPool, Linear(128->64) ReLU, Linear(64->10)."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def make_loader(torch: ModuleType, x: np.ndarray, y: np.ndarray, batch_size: int, seed: int) -> Any:
    """A shuffling DataLoader; both libraries draw their batch order from one seeded numdiff sampler."""
    data = torch.utils.data
    dataset = data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    order = numdiff.utils.data.RandomSampler(range(len(y)), generator=numdiff.Generator().manual_seed(seed))
    if torch is numdiff:  # what a PyTorch user writes: shuffle=True with a seeded generator
        return data.DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=order.generator)
    return data.DataLoader(dataset, batch_size=batch_size, sampler=order)


def train_epoch(
    torch: ModuleType, model: Any, loader: Any, optimizer: Any, device: str, desc: str
) -> tuple[float, float, float]:
    """One pass over `loader` with a tqdm bar of running loss and accuracy.

    Returns (mean loss, accuracy, seconds until the first optimizer step had finished).
    """
    from tqdm import tqdm

    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    total_loss, correct, seen = 0.0, 0, 0
    start, first_step = time.perf_counter(), None
    bar = tqdm(loader, desc=desc, dynamic_ncols=True)
    for xb, yb in bar:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        logits = model(xb)
        loss = loss_fn(logits, yb)
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * len(yb)
        correct += int((logits.argmax(dim=1) == yb).sum().item())
        seen += len(yb)
        if first_step is None:
            first_step = time.perf_counter() - start
        bar.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.3f}", refresh=False)
    bar.close()
    return total_loss / seen, correct / seen, first_step


def evaluate(torch: ModuleType, model: Any, x: np.ndarray, y: np.ndarray, device: str) -> float:
    """Accuracy of `model` on (x, y)."""
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(x).to(device))
        predicted = logits.argmax(dim=1).cpu().numpy()
    return float((predicted == y).mean())


def fit(
    torch: ModuleType,
    model: Any,
    data: tuple[np.ndarray, ...],
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    device: str,
    compile_model: bool = False,
    writer: Any = None,
) -> dict[str, Any]:
    """Train with Adam and CrossEntropyLoss; return accuracies and timings.

    With `compile_model` the training steps run ``numdiff.compile(model)`` (same Parameters). With a
    TensorBoard `writer`, each epoch's loss and accuracy are logged under the library's name.
    """
    x_train, y_train, x_test, y_test = data
    name = "numdiff" if torch is numdiff else "pytorch"
    model = model.to(device)
    step_model = numdiff.compile(model) if compile_model else model
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loader = make_loader(torch, x_train, y_train, batch_size, seed)
    epoch_times, history, first_step = [], [], None
    for epoch in range(1, epochs + 1):
        epoch_start = time.perf_counter()
        loss, accuracy, step_time = train_epoch(
            torch, step_model, loader, optimizer, device, f"[{name}] epoch {epoch}/{epochs}"
        )
        epoch_times.append(time.perf_counter() - epoch_start)
        history.append((loss, accuracy))
        first_step = step_time if first_step is None else first_step
        if writer is not None:
            writer.add_scalar(f"{name}/train_loss", loss, epoch)
            writer.add_scalar(f"{name}/train_accuracy", accuracy, epoch)
    test_accuracy = evaluate(torch, model, x_test, y_test, device)
    if writer is not None:
        writer.add_scalar(f"{name}/test_accuracy", test_accuracy, epochs)
        writer.flush()
    return {
        "model": model,
        "compiled": compile_model,
        "optimizer": optimizer,
        "first_step_s": first_step,
        "epoch_times_s": epoch_times,
        "train_loss": history[-1][0],
        "train_accuracy": history[-1][1],
        "test_accuracy": test_accuracy,
    }


def copy_weights(state: dict[str, Any], target: Any, torch: ModuleType) -> None:
    """Load a numdiff state dict into a PyTorch model with the same layout."""
    target.load_state_dict(
        {key: torch.from_numpy(np.array(value.cpu().numpy())) for key, value in state.items()}
    )


def steady_epoch_times(result: dict[str, Any]) -> tuple[float, float]:
    """(median, best) epoch time leaving out the first step (JIT compilation or cache loading).

    After the first epoch when there are others; on a shared machine the best epoch is the
    steadiest measure, the median the typical one.
    """
    times = result["epoch_times_s"]
    steady = times[1:] if len(times) > 1 else [times[0] - result["first_step_s"]]
    return float(np.median(steady)), float(np.min(steady))


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train with numdiff (and PyTorch unless --no-torch); print and return the results."""
    if args.threads is not None:  # timing harness, not training code: equal thread counts for both
        numdiff.set_num_threads(args.threads)
    data = load_data(args.seed, args.limit)
    print(f"digits: {len(data[1])} training and {len(data[3])} test images of 8x8, 10 classes")
    numdiff.manual_seed(args.seed)
    model = build_model(numdiff)
    initial = {key: value.detach().clone() for key, value in model.state_dict().items()}
    writer = None
    if args.tensorboard:
        from numdiff.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(args.tensorboard)
        print(f"logging loss and accuracy for TensorBoard to {args.tensorboard} (tensorboard --logdir {args.tensorboard})")
    results = {
        "numdiff": fit(
            numdiff, model, data, args.epochs, args.batch_size, args.lr, args.seed, args.device, args.compile, writer
        )
    }
    if writer is not None:
        writer.close()
    if args.save:
        result = results["numdiff"]
        checkpoint = {
            "model": result["model"].state_dict(),
            "optimizer": result["optimizer"].state_dict(),
            "epochs": args.epochs,
            "test_accuracy": result["test_accuracy"],
        }
        numdiff.save(checkpoint, args.save)
        print(f"saved checkpoint to {args.save}")
    torch = None if args.no_torch else _import_torch()
    if torch is not None and args.device == "cuda" and not torch.cuda.is_available():
        print("this PyTorch build has no CUDA: skipping the comparison run")
        torch = None
    if torch is not None:
        if args.threads is not None:
            torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        reference = build_model(torch)
        copy_weights(initial, reference, torch)
        results["pytorch"] = fit(
            torch, reference, data, args.epochs, args.batch_size, args.lr, args.seed, args.device
        )
    _report(results, torch)
    return results


def _import_torch() -> ModuleType | None:
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: skipping the comparison run")
        return None
    return torch


def _report(results: dict[str, dict[str, Any]], torch: ModuleType | None) -> None:
    print()
    for name, result in results.items():
        epochs = ", ".join(f"{t:.2f}" for t in result["epoch_times_s"])
        median, best = steady_epoch_times(result)
        print(
            f"{name:8s} test accuracy {result['test_accuracy']:.4f} | first step {result['first_step_s']:.3f} s "
            f"(JIT compile/cache load included) | epoch times [{epochs}] s | "
            f"steady epoch median {median:.3f} s, best {best:.3f} s"
        )
    if "pytorch" in results:
        ours, theirs = steady_epoch_times(results["numdiff"]), steady_epoch_times(results["pytorch"])
        label = "numdiff compiled" if results["numdiff"]["compiled"] else "numdiff"
        print(
            f"epoch-time ratio {label}/PyTorch eager: median {ours[0] / theirs[0]:.2f}, best {ours[1] / theirs[1]:.2f} "
            f"(PyTorch {torch.__version__}, {torch.get_num_threads()} threads)"
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--save", metavar="PATH", help="write a numdiff checkpoint (model + optimizer state)")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison run")
    parser.add_argument("--tensorboard", metavar="DIR", help="log numdiff's loss and accuracy per epoch to DIR")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N training images")
    parser.add_argument("--compile", action="store_true", help="train numdiff.compile(model) (PyTorch stays eager)")
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads for both numdiff (numdiff.set_num_threads) and PyTorch"
    )
    parser.add_argument(
        "--distributed", action="store_true", help="data-parallel over the ranks of `mpiexec -n N` (numdiff only)"
    )
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or (args.threads is not None and args.threads < 1):
        parser.error(
            f"--epochs, --batch-size and --threads must be positive, got {args.epochs}, {args.batch_size}, {args.threads}"
        )
    if args.device == "cuda" and not numdiff.cuda.is_available():
        parser.error("--device cuda: numdiff sees no CUDA device (numba-cuda and an NVIDIA GPU are needed)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.distributed:
        from digits_distributed import run_distributed

        accuracy = run_distributed(args, load_data, build_model)["test_accuracy"]
    else:
        accuracy = run(args)["numdiff"]["test_accuracy"]
    if args.limit is None and args.epochs >= 5 and accuracy < 0.97:
        print(f"numdiff test accuracy {accuracy:.4f} is below the 97% target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
