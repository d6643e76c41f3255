"""The optimizer folded into backward, as PyTorch's "optimizer step in backward" recipe does to
save the memory of all gradients at once: one Adam per parameter, stepped by a hook registered
with ``Tensor.register_post_accumulate_grad_hook``, which also frees the gradient. Around it,
the autograd-graph hooks the saved-tensor tutorial uses: ``saved_tensors_hooks`` and
``save_on_cpu`` must leave the gradients unchanged, and a grad_fn pre-hook scales the gradient
flowing back through one node.

With PyTorch installed the same weights and batch must give PyTorch's losses and parameters step
for step; alone, the model must fit its batch with every .grad left None.

Stands for: pytorch/tutorials intermediate_source/optimizer_step_in_backward_tutorial.py and
autograd_saved_tensors_hooks_tutorial.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

_rng = np.random.default_rng(50)
INPUTS = _rng.normal(size=(10, 6)).astype(np.float32)
TARGETS = _rng.normal(size=(10, 3)).astype(np.float32)


def train(torch, steps: int, initial: dict | None = None) -> tuple[list, dict, dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizers = {p: torch.optim.Adam([p], lr=1e-2) for p in model.parameters()}

    def step_in_backward(parameter):
        optimizers[parameter].step()
        optimizers[parameter].zero_grad()

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(step_in_backward)
    x, y = torch.from_numpy(INPUTS), torch.from_numpy(TARGETS)
    records = []
    packed = []
    for step in range(steps):
        hooks = (
            torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t.clone(), lambda t: t)
            if step % 2 else torch.autograd.graph.save_on_cpu()
        )  # fmt: skip
        with hooks:
            out = model(x)
        scaled = out * 1.0
        scaled.grad_fn.register_prehook(lambda grads: (grads[0] * 0.5,))
        loss = F.mse_loss(scaled, y)
        loss.backward()
        records.append((loss.item(), all(p.grad is None for p in model.parameters())))
    final = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    assert steps < 2 or packed, "the pack hook never ran"
    return records, final, start


def test_the_model_fits_its_batch_with_the_optimizer_in_backward():
    records, _, _ = train(numdiff, 40)
    assert all(freed for _, freed in records)
    assert records[-1][0] < 0.5 * records[0][0], records


def test_optimizer_in_backward_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_final, start = train(torch, 4)
    got, final, _ = train(numdiff, 4, start)
    assert [r[1] for r in got] == [r[1] for r in expected]
    np.testing.assert_allclose([r[0] for r in got], [r[0] for r in expected], rtol=1e-5)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train(numdiff, 40)[0][-1])
