"""numdiff.compile never returns a stale result: every piece of Python state a trace reads is
guarded (a change retraces) or makes the function run eagerly, with a warning saying why."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import numdiff


def _x():
    return numdiff.tensor([1.0, 2.0, 3.0], dtype=numdiff.float64)


def _check(compiled, eager, mutate, *args):
    """compiled(*args) equals eager(*args) before and after `mutate()` changes what it reads."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            np.testing.assert_allclose(compiled(*args).numpy(), eager(*args).numpy())
        mutate()
        for _ in range(2):
            np.testing.assert_allclose(compiled(*args).numpy(), eager(*args).numpy())


SCALE_TENSOR = numdiff.tensor(2.0, dtype=numdiff.float64)


def _scaled_by_item(x):
    return x * SCALE_TENSOR.item()


def test_a_global_0d_tensor_read_with_item_then_changed_in_place():
    def mutate():
        SCALE_TENSOR.fill_(5.0)

    _check(numdiff.compile(_scaled_by_item), _scaled_by_item, mutate, _x())


def test_a_parameter_read_with_item_inside_a_compiled_module():
    class Scale(numdiff.nn.Module):
        def __init__(self):
            super().__init__()
            self.s = numdiff.nn.Parameter(numdiff.tensor(2.0, dtype=numdiff.float64))

        def forward(self, x):
            return x * self.s.item()

    module = Scale()
    compiled = numdiff.compile(module)

    def mutate():
        with numdiff.no_grad():
            module.s.add_(1.5)

    _check(compiled, module, mutate, _x())


@pytest.mark.parametrize("what", ["tolist", "float", "bool", "numpy", "int"])
def test_every_host_read_of_an_outside_tensor_is_guarded_on_its_value(what):
    weights = numdiff.tensor([2.0, 3.0, 4.0], dtype=numdiff.float64)
    reads = {
        "tolist": lambda: weights.tolist()[1],
        "float": lambda: float(weights[1]),
        "bool": lambda: 10.0 if bool(weights[1] > 3.5) else 1.0,
        "numpy": lambda: weights.numpy()[1],
        "int": lambda: int(weights[1]),
    }

    def f(x):
        return x * reads[what]()

    def mutate():
        weights.add_(1.0)

    _check(numdiff.compile(f), f, mutate, _x())


CONFIG_LIST = [1.0, 2.0]
CONFIG_DICT = {"scale": 2.0}
CONFIG = types.SimpleNamespace(inner=types.SimpleNamespace(s=2.0))
GLOBAL_ARRAY = np.array([1.0, 2.0, 3.0])


def _reads_list(x):
    return x * CONFIG_LIST[1]


def _reads_dict(x):
    return x * CONFIG_DICT["scale"]


def _reads_nested(x):
    return x * CONFIG.inner.s


def _reads_array(x):
    return x * numdiff.tensor(GLOBAL_ARRAY)


def test_a_list_entry():
    _check(numdiff.compile(_reads_list), _reads_list, lambda: CONFIG_LIST.__setitem__(1, 7.0), _x())


def test_a_dict_value():
    _check(numdiff.compile(_reads_dict), _reads_dict, lambda: CONFIG_DICT.__setitem__("scale", 7.0), _x())


def test_a_nested_config_attribute():
    _check(numdiff.compile(_reads_nested), _reads_nested, lambda: setattr(CONFIG.inner, "s", 7.0), _x())


def test_a_global_numpy_array_changed_in_place():
    def mutate():
        GLOBAL_ARRAY[:] = [5.0, 6.0, 7.0]

    _check(numdiff.compile(_reads_array), _reads_array, mutate, _x())


CONFIG_WITH_A_CLASS = {"accumulate_in": np.float64, "scale": 2.0}


def _reads_beside_a_class(x):
    return x * CONFIG_WITH_A_CLASS["scale"]


def test_a_config_that_holds_a_numpy_scalar_class():
    # np.float64 has an __array_interface__ descriptor; the snapshot must not take the class for an array.
    _check(
        numdiff.compile(_reads_beside_a_class), _reads_beside_a_class,
        lambda: CONFIG_WITH_A_CLASS.__setitem__("scale", 7.0), _x(),
    )  # fmt: skip


def test_a_module_attribute_that_is_a_list_of_floats():
    class Weighted(numdiff.nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = [1.0, 2.0, 3.0]

        def forward(self, x):
            return x * numdiff.tensor(self.weights, dtype=numdiff.float64)

    module = Weighted()
    _check(numdiff.compile(module), module, lambda: module.weights.__setitem__(0, 9.0), _x())


HELPER_SCALE = 2.0


def _helper(x):
    return x * HELPER_SCALE


def _calls_helper(x):
    return _helper(x) + 1


def test_a_helpers_own_global():
    def mutate():
        global HELPER_SCALE
        HELPER_SCALE = 7.0

    _check(numdiff.compile(_calls_helper), _calls_helper, mutate, _x())


def test_a_mutable_default_argument():
    def f(x, factors=[2.0]):  # noqa: B006 - the default's mutation is the point
        return x * factors[0]

    _check(numdiff.compile(f), f, lambda: f.__defaults__[0].__setitem__(0, 7.0), _x())


def test_a_class_attribute_read_through_self():
    class Scaled(numdiff.nn.Module):
        factor = 2.0

        def forward(self, x):
            return x * self.factor

    module = Scaled()
    _check(numdiff.compile(module), module, lambda: setattr(Scaled, "factor", 7.0), _x())


def test_set_default_dtype_changed_between_calls():
    def f(x):
        return x * numdiff.tensor(1.0 / 3.0)

    compiled = numdiff.compile(f)
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
    previous = numdiff.get_default_dtype()
    try:
        assert compiled(x).dtype == f(x).dtype
        numdiff.set_default_dtype(numdiff.float64)
        assert compiled(x).dtype == f(x).dtype == numdiff.float64
        np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())
    finally:
        numdiff.set_default_dtype(previous)


def test_enable_grad_inside_the_function_when_called_under_no_grad():
    def f(x):
        with numdiff.enable_grad():
            return (x * 2).sum()

    compiled = numdiff.compile(f)
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    for _ in range(2):
        with numdiff.no_grad():
            out, expected = compiled(x), f(x)
        assert out.requires_grad == expected.requires_grad is True
        out.backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
        x.grad = None


def test_no_grad_inside_the_function_when_called_with_grad():
    def f(x):
        with numdiff.no_grad():
            y = x * 2
        return y * x

    compiled = numdiff.compile(f)
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    for _ in range(2):
        compiled(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
        x.grad = None


def test_inference_mode_at_the_call_is_part_of_the_key():
    compiled = numdiff.compile(lambda x: x * 2)
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    assert compiled(x).requires_grad
    with numdiff.inference_mode():
        out = compiled(x)
        assert not out.requires_grad
    assert compiled(x).requires_grad


def _leaf():
    return numdiff.tensor([1.0, 2.0, 3.0], dtype=numdiff.float64, requires_grad=True)


def _grads_of(f, x):
    f(x).sum().backward()
    return x.grad.numpy().copy()


def test_a_hook_on_an_intermediate_runs_as_in_eager():
    seen = []

    def f(x):
        y = x * 2
        y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
        return y.exp()

    compiled = numdiff.compile(f)
    with pytest.warns(UserWarning, match="register_hook"):
        got = _grads_of(compiled, _leaf())
    expected = _grads_of(f, _leaf())
    got_again = _grads_of(compiled, _leaf())
    np.testing.assert_allclose(got, expected)
    np.testing.assert_allclose(got_again, expected)
    assert len(seen) == 3


def test_retain_grad_on_an_intermediate_keeps_its_gradient():
    kept = []

    def f(x):
        y = x * 2
        y.retain_grad()
        kept.append(y)
        return (y * y).sum()

    compiled = numdiff.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            compiled(_leaf()).backward()
            np.testing.assert_allclose(kept[-1].grad.numpy(), [4.0, 8.0, 12.0])


def test_a_hook_registered_on_an_argument_inside_fires_once_per_call():
    calls = []

    def f(x):
        x.register_hook(lambda g: calls.append(1))
        return x * 3

    compiled = numdiff.compile(f)
    x = _leaf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(x).sum().backward()
    assert len(calls) == 1  # the trace's registration was undone before the eager rerun


def _mutate_then_backward(f, x):
    out = f(x)
    out.add_(1)
    out.sum().backward()


@pytest.mark.parametrize("name, fn", [
    ("exp (backward saves its output)", lambda x: x.exp()),
    ("a view of a saved output", lambda x: x.exp().view(3)),
    ("sigmoid", lambda x: (x * 2).sigmoid()),
])
def test_an_in_place_op_on_an_output_that_backward_saved_raises_as_in_eager(name, fn):
    with pytest.raises(RuntimeError, match="modified in place|modified by an inplace"):
        _mutate_then_backward(fn, _leaf())
    with pytest.raises(RuntimeError, match="modified in place"):
        _mutate_then_backward(numdiff.compile(fn), _leaf())


def test_an_in_place_op_on_an_output_that_views_a_leaf_raises_as_in_eager():
    f = numdiff.compile(lambda x: x[:2])
    x = _leaf()
    with pytest.raises(RuntimeError, match="view"):
        f(x).add_(1)
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0, 3.0])


def test_outputs_aliasing_an_argument_share_its_version_and_autograd_state():
    x = _leaf()
    detached = numdiff.compile(lambda x: x.detach())(x)
    assert not detached.requires_grad and detached.grad_fn is None
    assert numdiff.compile(lambda x: x)(x) is x
    with numdiff.no_grad():
        plain = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
        view = numdiff.compile(lambda t: t[:1])(plain)
    version = plain._version
    view.add_(1)
    assert plain._version == version + 1
    np.testing.assert_array_equal(plain.numpy(), [2.0, 2.0])


GRAD_OWNER = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)


def _scaled_by_grad(x):
    return x * GRAD_OWNER.grad


def test_a_grad_attribute_replaced_between_calls():
    GRAD_OWNER.grad = numdiff.tensor([1.0, 1.0], dtype=numdiff.float64)

    def mutate():
        GRAD_OWNER.grad = numdiff.tensor([5.0, 6.0], dtype=numdiff.float64)

    _check(numdiff.compile(_scaled_by_grad), _scaled_by_grad, mutate, numdiff.tensor([1.0, 3.0], dtype=numdiff.float64))


@pytest.mark.parametrize("source", ["numpy", "python"])
def test_a_draw_from_a_global_generator_runs_eagerly_and_says_why(source):
    import random

    draw = {"numpy": np.random.rand, "python": random.random}[source]

    def f(x):
        return x * draw()

    compiled = numdiff.compile(f)
    x = numdiff.tensor([1.0, 3.0], dtype=numdiff.float64)
    for call in range(3):
        state = (random.getstate(), np.random.get_state())
        if call == 0:
            with pytest.warns(UserWarning, match="global random generator"):
                got = compiled(x).numpy()
        else:
            got = compiled(x).numpy()
        random.setstate(state[0])
        np.random.set_state(state[1])
        np.testing.assert_array_equal(got, f(x).numpy())


SCALES = iter([1.0, 2.0, 3.0, 4.0])


def _reads_an_iterator(x):
    return x * next(SCALES)


def test_an_iterator_it_reads_runs_it_eagerly_and_says_why():
    compiled = numdiff.compile(_reads_an_iterator)
    x = numdiff.tensor([1.0], dtype=numdiff.float64)
    with pytest.warns(UserWarning, match="iterator"):
        assert compiled(x).item() == 1.0
    assert compiled(x).item() == 2.0


def test_a_compiled_function_under_vmap_and_func_grad_matches_eager():
    def f(x):
        return (x.sin() * 2).sum()

    compiled = numdiff.compile(f)
    numdiff.manual_seed(0)
    xs = numdiff.randn(4, 3, dtype=numdiff.float64)
    np.testing.assert_allclose(numdiff.func.vmap(compiled)(xs).numpy(), numdiff.func.vmap(f)(xs).numpy())
    grads = numdiff.func.vmap(numdiff.func.grad(compiled))(xs).numpy()
    np.testing.assert_allclose(grads, 2 * np.cos(xs.numpy()), rtol=1e-12)


def test_a_value_that_changes_on_every_call_ends_in_eager_mode_with_a_warning():
    weight = numdiff.nn.Parameter(numdiff.tensor(1.0, dtype=numdiff.float64))

    def f(x):
        return x * weight.item()

    compiled = numdiff.compile(f)
    x = numdiff.tensor([2.0], dtype=numdiff.float64)
    with pytest.warns(UserWarning, match="changed on 8 calls"):
        for step in range(12):
            with numdiff.no_grad():
                weight.fill_(float(step))
            assert compiled(x).item() == 2.0 * step
    assert compiled.compiled.compile_count == 8


BIG_TABLE = [float(i) for i in range(30000)]


def _reads_a_big_table(x):
    return x * BIG_TABLE[3]


def test_state_too_large_to_compare_runs_eagerly_and_says_why():
    compiled = numdiff.compile(_reads_a_big_table)
    x = numdiff.tensor([1.0], dtype=numdiff.float64)
    with pytest.warns(UserWarning, match="cannot be guarded"):
        assert compiled(x).item() == 3.0
    BIG_TABLE[3] = 5.0
    assert compiled(x).item() == 5.0


SETTINGS = types.ModuleType("user_settings")  # a user's settings module, imported as a name
SETTINGS.scale = 2.0
SETTINGS.model = types.ModuleType("user_settings.model")
SETTINGS.model.depth = 1


def _reads_a_module_attribute(x):
    return x * SETTINGS.scale + SETTINGS.model.depth


def test_attributes_of_a_users_module():
    compiled = numdiff.compile(_reads_a_module_attribute)

    def mutate():
        SETTINGS.scale = 7.0
        SETTINGS.model.depth = 3

    _check(compiled, _reads_a_module_attribute, mutate, _x())


HOOK_SCALE = 2.0


def test_a_forward_hooks_own_global():
    layer = numdiff.nn.Identity()
    layer.register_forward_hook(lambda module, inputs, out: out * HOOK_SCALE)

    def mutate():
        global HOOK_SCALE
        HOOK_SCALE = 7.0

    _check(numdiff.compile(layer), layer, mutate, _x())


DEEPCOPIED = numdiff.tensor([1.0, 2.0, 3.0], dtype=numdiff.float64)


def _adds_a_deep_copy(x):
    return x + copy.deepcopy(DEEPCOPIED)


def test_a_deep_copy_of_an_outside_tensor():
    _check(numdiff.compile(_adds_a_deep_copy), _adds_a_deep_copy, lambda: DEEPCOPIED.mul_(3.0), _x())


@pytest.mark.parametrize("change", ["grad mode", "default dtype", "manual_seed"])
def test_a_function_that_changes_global_state_runs_eagerly_and_says_why(change):
    def f(x):
        if change == "grad mode":
            numdiff.set_grad_enabled(False)
        elif change == "default dtype":
            numdiff.set_default_dtype(numdiff.float64)
        else:
            numdiff.manual_seed(7)
        return x * numdiff.rand(1, dtype=numdiff.float64)

    compiled = numdiff.compile(f)
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
    previous = numdiff.get_default_dtype()
    try:
        for call in range(2):
            numdiff.manual_seed(call)
            if call == 0:
                with pytest.warns(UserWarning, match="global state"):
                    got = compiled(x)
            else:
                got = compiled(x)
            after = (numdiff.is_grad_enabled(), numdiff.get_default_dtype(), numdiff.rand(1).item())
            numdiff.set_grad_enabled(True)
            numdiff.set_default_dtype(previous)
            numdiff.manual_seed(call)
            expected = f(x)
            assert after == (numdiff.is_grad_enabled(), numdiff.get_default_dtype(), numdiff.rand(1).item())
            numdiff.set_grad_enabled(True)
            numdiff.set_default_dtype(previous)
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
    finally:
        numdiff.set_grad_enabled(True)
        numdiff.set_default_dtype(previous)


def test_an_attribute_added_to_a_module_after_compiling():
    class Boosted(numdiff.nn.Module):
        def forward(self, x):
            return x * getattr(self, "boost", 1.0)

    module = Boosted()
    _check(numdiff.compile(module), module, lambda: setattr(module, "boost", 3.0), _x())


def test_one_tensor_returned_twice_is_one_tensor():
    first, second = numdiff.compile(lambda x: (lambda y: (y, y))(x * 2))(_leaf())
    assert first is second


def test_a_method_replaced_on_the_modules_class():
    class Doubling(numdiff.nn.Module):
        def forward(self, x):
            return self.scale(x)

        def scale(self, x):
            return x * 2

    module = Doubling()
    _check(numdiff.compile(module), module, lambda: setattr(Doubling, "scale", lambda self, x: x * 5), _x())


CALL_SCALE = 2.0


class _ScaledCall:
    def __call__(self, x):
        return x * CALL_SCALE


def test_a_callable_objects_call_method_globals():
    scaled = _ScaledCall()

    def mutate():
        global CALL_SCALE
        CALL_SCALE = 7.0

    _check(numdiff.compile(scaled), scaled, mutate, _x())


def test_numdiff_itself_is_guarded_by_identity_not_by_its_attributes():
    # numdiff's module object is a ModuleType subclass (numdiff/__init__.py's _Package): a guard that
    # compared its attributes found the names its first call loaded lazily, and fell back to eager.
    from numdiff.compile.guards import PythonGuard
    from numdiff.compile.python_state import StateWalk

    assert StateWalk(numdiff.nn.Module).snap(numdiff)[0] == "id"
    guard = PythonGuard(lambda x: numdiff.sin(x))
    assert not guard.deep and guard.holds()


def test_a_first_compiled_call_that_loads_a_deferred_package_is_replayed():
    # In a fresh process `import numdiff` loads the core only; the compiled function's first call
    # loads numdiff.nn (and compile's own modules), which adds names to numdiff's namespace.
    program = (
        "import warnings\n"
        "import numpy as np\n"
        "import numdiff as nd\n"
        "x = nd.tensor(np.linspace(-1, 1, 16, dtype=np.float32), requires_grad=True)\n"
        "f = nd.compile(lambda x: nd.nn.functional.relu(nd.sin(x)).exp().sum())\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    for _ in range(3):\n"
        "        x.grad = None\n"
        "        f(x).backward()\n"
        "print('fallbacks:', [str(w.message) for w in seen if 'numdiff.compile' in str(w.message)])\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(numdiff.__file__)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "fallbacks: []" in done.stdout, done.stdout
