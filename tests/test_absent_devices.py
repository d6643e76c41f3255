"""numdiff.xpu, numdiff.mps and numdiff.mtia: the probes programs make answer as PyTorch does on a
machine without the device, and using the device raises an error naming it."""

from __future__ import annotations

import pytest

import numdiff


@pytest.mark.parametrize("name", ["xpu", "mps", "mtia"])
def test_probes_answer_no_device(name):
    module = getattr(numdiff, name)
    assert module.is_available() is False and module.is_initialized() is False
    assert module.device_count() == 0
    module.manual_seed(0)
    module.manual_seed_all(0)
    module.empty_cache()
    assert sorted(dir(module)) == sorted(module.__all__)


@pytest.mark.parametrize("name", ["xpu", "mps", "mtia"])
def test_using_the_device_raises_naming_it(name):
    module = getattr(numdiff, name)
    with pytest.raises(RuntimeError, match=rf"numdiff.{name}.synchronize: numdiff has no {name.upper()} device"):
        module.synchronize()
    with pytest.raises(RuntimeError, match="current_device"):
        module.current_device()
