"""The main job, examples/train_digits.py, on a small subset: it learns, checkpoints, and matches PyTorch."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import numdiff

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "train_digits.py"
LIMIT, BATCH, LR, SEED = 600, 8, 5e-3, 0


@pytest.fixture(scope="module")
def train_digits():
    spec = importlib.util.spec_from_file_location("train_digits", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(train_digits):
    return train_digits.load_data(SEED, limit=LIMIT)


@pytest.fixture(scope="module")
def numdiff_run(train_digits, data):
    numdiff.manual_seed(SEED)
    model = train_digits.build_model(numdiff)
    initial = {key: value.detach().clone() for key, value in model.state_dict().items()}
    result = train_digits.fit(
        numdiff, model, data, epochs=1, batch_size=BATCH, lr=LR, seed=SEED, device="cpu"
    )
    return initial, result


def test_data_is_a_stratified_quarter_split_of_8x8_images(data):
    x_train, y_train, x_test, y_test = data
    assert x_train.shape == (LIMIT, 1, 8, 8) and x_test.shape == (450, 1, 8, 8)
    assert x_train.dtype == np.float32 and 0.0 <= x_train.min() and x_train.max() <= 1.0
    from sklearn.datasets import load_digits

    per_class = np.bincount(load_digits().target)
    assert np.all(
        np.abs(np.bincount(y_test) - 0.25 * per_class) <= 1
    )  # stratified: each digit keeps its share


def test_one_short_epoch_on_a_subset_learns_well_above_chance(numdiff_run):
    _, result = numdiff_run
    assert result["test_accuracy"] >= 0.4  # chance is 0.1
    assert result["train_loss"] < 2.2  # the loss at initialisation is about ln(10) = 2.30
    assert result["first_step_s"] > 0 and len(result["epoch_times_s"]) == 1


def test_pytorch_from_the_same_weights_and_batches_ends_at_the_same_model(train_digits, data, numdiff_run):
    torch = pytest.importorskip("torch")
    initial, result = numdiff_run
    reference = train_digits.build_model(torch)
    train_digits.copy_weights(initial, reference, torch)
    expected = train_digits.fit(
        torch, reference, data, epochs=1, batch_size=BATCH, lr=LR, seed=SEED, device="cpu"
    )
    assert result["train_loss"] == pytest.approx(expected["train_loss"], abs=2e-3)
    assert result["test_accuracy"] == pytest.approx(expected["test_accuracy"], abs=0.02)
    ours = result["model"].state_dict()
    for key, value in expected["model"].state_dict().items():
        np.testing.assert_allclose(ours[key].detach().numpy(), value.detach().numpy(), atol=2e-3, err_msg=key)


def test_command_line_run_saves_a_checkpoint_that_restores_the_model(train_digits, tmp_path, capsys):
    path = tmp_path / "digits.ckpt"
    argv = ["--epochs", "1", "--limit", "200", "--batch-size", "16", "--no-torch", "--save", str(path)]
    assert train_digits.main(argv) == 0
    out = capsys.readouterr().out
    assert "first step" in out and "test accuracy" in out and f"saved checkpoint to {path}" in out
    checkpoint = numdiff.load(path)
    assert checkpoint["epochs"] == 1 and set(checkpoint["optimizer"]) == {"state", "param_groups"}
    model = train_digits.build_model(numdiff)
    model.load_state_dict(checkpoint["model"])
    _, _, x_test, y_test = train_digits.load_data(0)
    assert train_digits.evaluate(numdiff, model, x_test, y_test, "cpu") == pytest.approx(
        checkpoint["test_accuracy"]
    )


def test_compiled_training_ends_at_the_eager_model(train_digits, data, numdiff_run):
    initial, eager = numdiff_run
    model = train_digits.build_model(numdiff)
    model.load_state_dict(initial)
    compiled = train_digits.fit(
        numdiff, model, data, epochs=1, batch_size=BATCH, lr=LR, seed=SEED, device="cpu", compile_model=True
    )
    assert compiled["compiled"]
    for key, value in eager["model"].state_dict().items():
        np.testing.assert_allclose(compiled["model"].state_dict()[key].numpy(), value.numpy(), rtol=1e-4, atol=1e-5)


def test_command_line_run_logs_loss_and_accuracy_for_tensorboard(train_digits, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    argv = ["--epochs", "2", "--limit", "200", "--batch-size", "16", "--no-torch", "--tensorboard", str(tmp_path)]
    assert train_digits.main(argv) == 0
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [e.step for e in events.Scalars("numdiff/train_loss")] == [1, 2]
    assert len(events.Scalars("numdiff/train_accuracy")) == 2
    assert 0.0 <= events.Scalars("numdiff/test_accuracy")[0].value <= 1.0
