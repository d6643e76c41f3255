"""numdiff.onnx.export: onnxruntime runs the exported models and matches numdiff; torch.onnx agrees."""

from __future__ import annotations

import io

import numpy as np
import pytest

import numdiff
from numdiff import nn
from numdiff.ops.norm import grouped_moments

pytest.importorskip("onnx", reason="pip install -e '.[interchange]'")
ort = pytest.importorskip("onnxruntime", reason="pip install -e '.[interchange]'")


def _run_onnx(model, inputs, feeds=None, **options):
    buffer = io.BytesIO()
    names = [f"x{i}" for i in range(len(inputs))]
    numdiff.onnx.export(model, tuple(inputs), buffer, input_names=names, **options)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    feeds = inputs if feeds is None else feeds
    return session.run(None, {n: x.numpy() for n, x in zip(names, feeds)})


def _expected(model, inputs):
    with numdiff.no_grad():
        out = model(*inputs)
    flat = []

    def walk(o):
        if isinstance(o, (tuple, list)):
            for item in o:
                walk(item)
        else:
            flat.append(o.numpy())

    walk(out)
    return flat


def _cnn():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.3),
        nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2), nn.GELU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(8, 10), nn.LogSoftmax(1),
    )  # fmt: skip


MODELS = {
    "cnn with batch norm": (_cnn, lambda: [numdiff.randn(2, 1, 8, 8)]),
    "transformer encoder layer": (lambda: nn.TransformerEncoderLayer(16, 4, 32, batch_first=True),
                                  lambda: [numdiff.randn(2, 5, 16)]),
    "transformer decoder layer": (lambda: nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, norm_first=True),
                                  lambda: [numdiff.randn(2, 4, 8), numdiff.randn(2, 3, 8)]),
    "embedding language model": (lambda: nn.Sequential(nn.Embedding(20, 8), nn.LayerNorm(8), nn.Linear(8, 20)),
                                 lambda: [numdiff.randint(0, 20, (3, 7))]),
    "lstm": (lambda: nn.LSTM(4, 6, num_layers=2, batch_first=True), lambda: [numdiff.randn(2, 5, 4)]),
    "bidirectional gru": (lambda: nn.GRU(4, 6, bidirectional=True), lambda: [numdiff.randn(5, 2, 4)]),
    "decoder with transposed convs": (
        lambda: nn.Sequential(nn.ConvTranspose2d(3, 4, 4, stride=2, padding=1), nn.BatchNorm2d(4), nn.LeakyReLU(0.2),
                              nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1), nn.Tanh()),
        lambda: [numdiff.randn(2, 3, 4, 4)],
    ),
    "super-resolution with pixel shuffle": (
        lambda: nn.Sequential(nn.Conv2d(1, 8, 5, padding=2), nn.ReLU(), nn.Conv2d(8, 4, 3, padding=1), nn.PixelShuffle(2)),
        lambda: [numdiff.randn(1, 1, 6, 6)],
    ),
    "style block": (
        lambda: nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(3, 4, 3), nn.InstanceNorm2d(4, affine=True), nn.ReLU(),
                              nn.Upsample(scale_factor=2), nn.Conv2d(4, 3, 3, padding=1), nn.Sigmoid()),
        lambda: [numdiff.randn(1, 3, 5, 5)],
    ),
    "resampling and padding": (
        lambda: nn.Sequential(nn.ReplicationPad2d((1, 2, 0, 1)), nn.Upsample(scale_factor=2, mode="bilinear"),
                              nn.Conv2d(2, 3, 3), nn.Upsample(size=(7, 9), mode="bicubic", align_corners=True),
                              nn.CircularPad2d(1), nn.Upsample(scale_factor=1.5, mode="nearest")),
        lambda: [numdiff.randn(2, 2, 4, 5)],
    ),
    "mlp of activations": (
        lambda: nn.Sequential(nn.Linear(5, 7), nn.SiLU(), nn.Softplus(), nn.ELU(), nn.Hardswish(), nn.Mish(),
                              nn.SELU(), nn.CELU(), nn.Hardtanh(), nn.Softsign(), nn.Tanhshrink(), nn.Softmax(-1)),
        lambda: [numdiff.randn(3, 5)],
    ),
    "conv1d with pooling": (
        lambda: nn.Sequential(nn.Conv1d(3, 4, 3, padding=1), nn.BatchNorm1d(4), nn.ReLU(), nn.AvgPool1d(2),
                              nn.Flatten(), nn.Linear(8, 2)),
        lambda: [numdiff.randn(2, 3, 4)],
    ),
    "group norm": (lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.GroupNorm(2, 4)), lambda: [numdiff.randn(2, 4, 3, 3)]),
    "prelu per channel and shared": (
        lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.PReLU(3, 0.2), nn.Conv2d(3, 2, 1), nn.PReLU(), nn.Flatten(),
                              nn.Linear(32, 4), nn.PReLU(4)),
        lambda: [numdiff.randn(2, 2, 6, 6)],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(MODELS))
def test_onnxruntime_matches_numdiff(name):
    numdiff.manual_seed(0)
    make, inputs = MODELS[name]
    model = make().eval()
    xs = inputs()
    got = _run_onnx(model, xs)
    for g, want in zip(got, _expected(model, xs)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["cnn with batch norm", "transformer encoder layer", "embedding language model",
                                  "decoder with transposed convs", "style block", "resampling and padding"])
def test_a_dynamic_batch_axis_runs_at_other_sizes(name):
    numdiff.manual_seed(0)
    make, inputs = MODELS[name]
    model = make().eval()
    xs = inputs()
    axis = 0
    bigger = [numdiff.cat([x] * 3, dim=axis) for x in xs]
    got = _run_onnx(model, xs, feeds=bigger, dynamic_axes={"x0": {axis: "batch"}})
    np.testing.assert_allclose(got[0], _expected(model, bigger)[0], rtol=1e-4, atol=1e-5)


def test_a_state_created_at_the_batch_size_cannot_follow_a_dynamic_axis():
    lstm = nn.LSTM(4, 6, batch_first=True)  # its zero initial state is made at the traced batch size
    with pytest.raises(numdiff.onnx.OnnxExporterError, match="size follows a dynamic axis"):
        numdiff.onnx.export(lstm, numdiff.randn(2, 5, 4), None, input_names=["x"], dynamic_axes={"x": [0]})


def test_the_export_agrees_with_torch_onnx_on_the_same_weights(tmp_path):
    torch = pytest.importorskip("torch")
    numdiff.manual_seed(0)
    ours = _cnn().eval()
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Dropout(0.3), torch.nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2), torch.nn.GELU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10), torch.nn.LogSoftmax(1),
    ).eval()  # fmt: skip
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    x = numdiff.randn(3, 1, 8, 8)
    numdiff.onnx.export(ours, (x,), tmp_path / "ours.onnx", input_names=["x"], output_names=["y"])
    torch.onnx.export(theirs, (torch.from_numpy(x.numpy()),), tmp_path / "theirs.onnx", input_names=["x"],
                      output_names=["y"], dynamo=False)
    results = [ort.InferenceSession(str(tmp_path / f"{who}.onnx")).run(None, {"x": x.numpy()})[0]
               for who in ("ours", "theirs")]
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_names_initializers_and_modes():
    import onnx

    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).train()
    proto = numdiff.onnx.export(model, numdiff.randn(2, 3), None, input_names=["features"], output_names=["logits"])
    assert model.training  # traced in eval mode, as torch.onnx does by default, then restored
    assert [i.name for i in proto.graph.input] == ["features"] and [o.name for o in proto.graph.output] == ["logits"]
    assert {"0.weight", "0.bias", "1.running_mean", "1.running_var"} <= {t.name for t in proto.graph.initializer}
    bare = numdiff.onnx.export(model, numdiff.randn(2, 3), None, export_params=False)
    assert "0.weight" in [i.name for i in bare.graph.input]
    onnx.checker.check_model(proto)


def test_ops_without_an_onnx_form_are_named():
    class Cumulative(nn.Module):
        def forward(self, x):
            return x.cumprod(1)

    with pytest.raises(numdiff.onnx.UnsupportedOperatorError, match="'cumprod' has no ONNX form"):
        numdiff.onnx.export(Cumulative(), numdiff.rand(2, 3), None)
    assert "conv2d" in numdiff.onnx.supported_ops()


def test_value_dependent_control_flow_is_refused_clearly():
    class Branchy(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(numdiff.onnx.OnnxExporterError, match="cannot be traced into one graph"):
        numdiff.onnx.export(Branchy(), numdiff.randn(3), None)


def test_fused_norms_export_with_their_statistics():
    """grouped_norm (GroupNorm, LayerNorm) and grouped_moments (BatchNorm's batch statistics) as ONNX
    nodes: a module returning a GroupNorm'd input and the per-group moments runs in onnxruntime."""
    class Norms(nn.Module):
        def __init__(self):
            super().__init__()
            self.group, self.layer = nn.GroupNorm(2, 4), nn.LayerNorm(3)

        def forward(self, x):
            return self.layer(self.group(x)), grouped_moments(x, (1, 2, 4, 1, 3))

    model = Norms()
    x = numdiff.randn(2, 4, 3) * 2 + 1
    for got, want in zip(_run_onnx(model, [x]), _expected(model, [x])):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_exports_along_any_dim(dim, log):
    """softmax is an op of its own (not exp(log_softmax)); both export along any dim, negative ones too."""

    class Scores(nn.Module):
        def forward(self, x):
            scores = x.masked_fill(x > 1.5, float("-inf"))
            return numdiff.log_softmax(scores, dim) if log else numdiff.softmax(scores, dim)

    numdiff.manual_seed(10 + dim + 7 * log)
    xs = [numdiff.randn(3, 4, 5)]
    np.testing.assert_allclose(_run_onnx(Scores(), xs)[0], _expected(Scores(), xs)[0], rtol=1e-5, atol=1e-6)
