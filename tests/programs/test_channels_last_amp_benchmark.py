"""A small CNN trained the way PyTorch's performance recipes set it up: model and inputs in
channels_last, forward under CPU autocast (bfloat16) with a GradScaler, gradient clipping, and
the step timed with utils.benchmark on inputs drawn by a Fuzzer. Tests check learning and
layouts, never the clock.

Stands for: pytorch/tutorials intermediate_source/memory_format_tutorial.py,
recipes_source/recipes/amp_recipe.py (run on the CPU), recipes_source/recipes/benchmark.py and
timer_quick_start.py.
"""

from __future__ import annotations

import numdiff as torch
import numdiff.nn as nn
import numdiff.utils.benchmark as benchmark


def make_data(generator, n=96):
    labels = torch.randint(0, 2, (n,), generator=generator)
    images = torch.rand(n, 3, 12, 12, generator=generator)
    images[:, 0] += 0.5 * labels[:, None, None]  # class 1 is redder
    return images.contiguous(memory_format=torch.channels_last), labels


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2),
    ).to(memory_format=torch.channels_last)


def test_a_channels_last_cnn_learns_under_autocast_with_a_grad_scaler():
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    images, labels = make_data(generator)
    assert images.is_contiguous(memory_format=torch.channels_last) and not images.is_contiguous()
    model = make_model()
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    scaler = torch.amp.GradScaler("cpu")
    losses = []
    for _ in range(60):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            logits = model(images)
            assert logits.dtype == torch.bfloat16
            loss = nn.functional.cross_entropy(logits, labels)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss))
    assert sum(losses[-5:]) / 5 < 0.6 * sum(losses[:5]) / 5, losses
    with torch.no_grad():
        accuracy = (model(images).argmax(1) == labels).float().mean().item()
    assert accuracy > 0.9, accuracy


def test_the_step_is_timed_on_fuzzed_inputs_and_compared():
    model = make_model()
    fuzzer = benchmark.Fuzzer(
        parameters=[benchmark.FuzzedParameter("n", minval=1, maxval=16, distribution="loguniform")],
        tensors=[benchmark.FuzzedTensor("x", size=("n", 3, 8, 8), probability_contiguous=0.5, max_elements=4096)],
        seed=0,
    )
    results = []
    for tensors, properties, params in fuzzer.take(3):
        x = tensors["x"]
        assert tuple(x.shape) == (params["n"], 3, 8, 8) and properties["x"]["numel"] == x.numel()
        timer = benchmark.Timer("model(x)", globals={"model": model, "x": x}, label="cnn forward",
                                sub_label=f"n={params['n']}", description="channels_last model")
        results.append(timer.timeit(2))
    table = str(benchmark.Compare(results))
    assert "cnn forward" in table and all(f"n={r.task_spec['sub_label'][2:]}" in table for r in results)
    assert all(m.times and m.title.startswith("cnn forward: n=") for m in results)
