"""numdiff.onnx.export of a model on CUDA: the initializers are the parameters' values, copied to the
host through the device seam."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import nn

onnx = pytest.importorskip("onnx", reason="pip install -e '.[interchange]'")


def test_a_cuda_model_exports_its_parameters_as_host_initializers():
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU()).to("cuda")
    proto = numdiff.onnx.export(model, numdiff.randn(2, 3, device="cuda"), None, input_names=["x"])
    values = [onnx.numpy_helper.to_array(initializer) for initializer in proto.graph.initializer]
    expected = [p.detach().cpu().numpy() for p in (model[0].weight, model[0].bias)]
    assert len(values) == 2
    for value in values:
        assert any(value.shape == e.shape and np.array_equal(value, e) for e in expected)
