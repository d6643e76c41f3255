"""SummaryWriter's event files, read back with TensorBoard's own reader (EventAccumulator)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import numdiff
from numdiff import nn

pytest.importorskip("tensorboard", reason="pip install -e '.[interchange]'")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from numdiff.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(folder) -> EventAccumulator:
    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
    accumulator.Reload()
    return accumulator


def test_scalars_read_back_with_their_steps_and_values(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(5):
            writer.add_scalar("loss/train", numdiff.tensor(1.0 / (step + 1)), step)
        writer.add_scalar("lr", 0.5, 7)
    events = _read(tmp_path).Scalars("loss/train")
    assert [e.step for e in events] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose([e.value for e in events], [1.0, 0.5, 1 / 3, 0.25, 0.2], rtol=1e-6)
    assert _read(tmp_path).Scalars("lr")[0].value == 0.5


def test_add_scalars_writes_one_run_per_tag(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalars("loss", {"train": 1.0, "test": 2.0}, 3)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["loss_test", "loss_train"]
    assert _read(tmp_path / "loss_test").Scalars("loss")[0].value == 2.0


def test_histograms_count_every_value(tmp_path):
    values = numdiff.randn(1000)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", values, 1)
        writer.add_histogram("w10", values, 1, bins=10)
    histogram = _read(tmp_path).Histograms("w")[0].histogram_value
    array = values.numpy().astype(np.float64)
    assert histogram.num == 1000 and sum(histogram.bucket) == 1000
    assert histogram.min == pytest.approx(array.min()) and histogram.max == pytest.approx(array.max())
    assert histogram.sum_squares == pytest.approx(np.dot(array, array), rel=1e-6)
    ten = _read(tmp_path).Histograms("w10")[0].histogram_value
    np.testing.assert_array_equal(ten.bucket, np.histogram(array, bins=10)[0])


def test_images_decode_to_the_pixels_logged(tmp_path):
    from PIL import Image

    chw = numdiff.rand(3, 5, 7)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("rgb", chw, 0)
        writer.add_image("gray", (numdiff.rand(4, 6) * 255).to(numdiff.uint8), 0, dataformats="HW")
        writer.add_images("batch", numdiff.rand(3, 1, 4, 4), 0)
    image = _read(tmp_path).Images("rgb")[0]
    assert (image.height, image.width) == (5, 7)
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    np.testing.assert_array_equal(pixels, np.clip(chw.numpy().transpose(1, 2, 0) * 255, 0, 255).round().astype(np.uint8))
    assert _read(tmp_path).Images("batch")[0].width == 12


def test_hparams_and_their_metrics(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.1, "optimizer": "adam", "nesterov": True}, {"hparam/accuracy": 0.9}, run_name="run1")
    run = _read(tmp_path / "run1")
    content = run.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert start.session_start_info.hparams["lr"].number_value == 0.1
    assert start.session_start_info.hparams["optimizer"].string_value == "adam"
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    assert [m.name.tag for m in experiment.experiment.metric_infos] == ["hparam/accuracy"]
    assert run.Scalars("hparam/accuracy")[0].value == pytest.approx(0.9)


def test_add_graph_draws_the_traced_model_with_parameter_names(tmp_path):
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(144, 10))
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, numdiff.randn(2, 1, 8, 8))
    assert model.training  # traced in eval mode, then restored
    graph = _read(tmp_path).Graph()
    names = {node.name for node in graph.node}
    ops = [node.op for node in graph.node]
    assert {"params/0.weight", "params/4.bias", "input/x0", "output/y0"} <= names
    assert "conv2d" in ops and "linear" in ops and "relu" in ops
    linear = next(node for node in graph.node if node.op == "linear")
    assert "params/4.weight" in linear.input


def test_bad_values_are_refused_by_name(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match="add_scalar: 'x' needs one number"):
            writer.add_scalar("x", numdiff.ones(2))
        with pytest.raises(ValueError, match="add_histogram: 'h' holds NaN"):
            writer.add_histogram("h", numdiff.tensor([1.0, float("nan")]))
        with pytest.raises(ValueError, match="dataformats 'CHW' does not describe"):
            writer.add_image("i", numdiff.rand(4, 4))
        with pytest.raises(TypeError, match="hyperparameter 'f' must be"):
            writer.add_hparams({"f": [1, 2]}, {})
        with pytest.raises(ValueError, match="needs input_to_model"):
            writer.add_graph(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="is closed"):
        writer.add_scalar("x", 1.0)
