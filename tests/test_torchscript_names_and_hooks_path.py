"""numdiff.jit's TorchScript names behave as in PyTorch's eager mode, and numdiff.utils.hooks is
where tools import RemovableHandle (torchinfo imports both at load)."""

from __future__ import annotations

import pytest

import numdiff
import numdiff.nn as nn
from numdiff import jit
from numdiff.utils.hooks import RemovableHandle, unserializable_hook


def test_eager_answers():
    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert not isinstance(nn.Linear(2, 2), jit.ScriptModule)

    def f(x):
        return x + 1

    assert jit.ignore(f) is f and jit.unused(f) is f and jit.export(f) is f
    assert jit.ignore(drop=True)(f) is f


def test_compiling_to_torchscript_raises_naming_the_alternative():
    with pytest.raises(NotImplementedError, match="numdiff.jit.script: TorchScript is not part of numdiff.*numdiff.compile"):
        jit.script(nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="numdiff.jit.trace"):
        jit.trace(nn.Linear(2, 2), numdiff.ones(1, 2))
    with pytest.raises(NotImplementedError, match="ScriptModule"):
        jit.ScriptModule()


def test_hook_handles_come_from_utils_hooks():
    handle = nn.Linear(2, 2).register_forward_hook(lambda m, i, o: None)
    assert isinstance(handle, RemovableHandle)

    def hook(grad):
        return grad

    assert unserializable_hook(hook) is hook and hook.__torch_unserializable__
