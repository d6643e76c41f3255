# %% [markdown]
# # Leaf tensors: which tensors keep a gradient, and why
#
# This notebook runs every rule of numdiff's *leaf contract* on real tensors. numdiff uses
# PyTorch's names and rules (`import numdiff as torch` ports most code), so everything here holds
# for PyTorch too; the one place numdiff is stricter is marked.
#
# **The whole story in four lines:**
#
# | tensor | example | is it a leaf? | `.grad` after `backward()` |
# |---|---|---|---|
# | you made it, asked for gradients | `w = numdiff.tensor([...], requires_grad=True)` | yes | **kept** (accumulates) |
# | you made it, no gradient asked | `data = numdiff.tensor([...])` | yes | ignored by backward |
# | an op made it | `h = w * 2` | no | passed through, then thrown away |
# | an op made it, and it asked to keep it | `h.retain_grad()` | no | kept for this tensor |
#
# A **leaf** is a tensor that no recorded operation produced. Training adjusts leaves (the
# weights); everything computed from them is scaffolding that is rebuilt on every batch, so
# storing its gradient would waste memory on numbers nobody reads.
#
# Each graph below is drawn by `numdiff.viz.draw_graph`: blue boxes are leaves that require
# grad, grey boxes are the recorded operations (the `grad_fn` of the tensor they made), orange
# marks an intermediate that retains its gradient, and green is the tensor we call `backward()`
# on. Arrows show data flowing forward; `backward()` walks them from the bottom up.

# %%
import os
import sys
import warnings

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from sklearn.datasets import load_digits

try:
    import numdiff
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, os.path.abspath(".."))
    import numdiff

from numdiff import nn
from numdiff.viz import draw_graph

SMALL = os.environ.get("NUMDIFF_NOTEBOOK_SMALL") == "1"  # CI runs this notebook with tiny sizes
numdiff.manual_seed(0)
print("numdiff", numdiff.__version__)

# %% [markdown]
# ## 1. Leaves and intermediates
#
# `w` and `data` are made by us, so both are leaves. `h` and `loss` are made by operations, so
# they are not. `requires_grad` spreads forward: any input that requires grad makes the output
# require grad too, which is how gradient can flow back from `loss` to `w` at all.

# %%
w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)  # a leaf: you made it, asked for grad
data = numdiff.tensor([10.0, 10.0, 10.0])  # a leaf too, no grad wanted
h = w * 2  # made BY an operation: not a leaf
loss = (h * data).sum()

print("is_leaf:       w", w.is_leaf, "| data", data.is_leaf, "| h", h.is_leaf, "| loss", loss.is_leaf)
print("requires_grad: w", w.requires_grad, "| data", data.requires_grad, "| h", h.requires_grad)
print("grad_fn:       w", w.grad_fn, "| h", h.grad_fn, "| loss", loss.grad_fn)

# %% [markdown]
# The graph `backward()` will walk. `data` does not appear: it needs no gradient, so no edge
# leads to it and backward never visits it.

# %%
draw_graph(loss, params={"w": w, "data": data})

# %%
loss.backward()
print("w.grad =", w.grad)  # d(loss)/dw = 2 * data = 20
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("h.grad =", h.grad)  # None: an intermediate passes its gradient on and keeps nothing
print("warning:", caught[0].message)

# %% [markdown]
# `h.requires_grad` is `True`, yet `h.grad` is `None`. These answer different questions:
#
# - `requires_grad=True` on `h` means *gradient flows through me* (it must, or `w` could never be
#   reached);
# - *keeping* the gradient in `.grad` is reserved for leaves.
#
# Reading `.grad` of a non-leaf warns, and the warning names the op that made the tensor.

# %% [markdown]
# ## 2. `retain_grad()`: keeping one intermediate's gradient
#
# To inspect an intermediate's gradient (debugging, looking at attention weights...), ask
# **before** calling backward. The drawing marks `h` in orange.

# %%
w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = w * 2
h.retain_grad()  # ask autograd to keep this one
out = (h * 10).sum()
display(draw_graph(out, params={"w": w}))
out.backward()
print("h.grad =", h.grad, " (d out / d h = 10)")
print("w.grad =", w.grad, " (chain rule: 10 * 2)")

# %% [markdown]
# ## 3. You cannot switch `requires_grad` on a non-leaf
#
# `requires_grad` belongs to leaves. numdiff is **stricter than PyTorch** here: PyTorch raises
# only for `requires_grad_(False)`; numdiff raises for `True` too, because switching it on a
# tensor an op produced never does what people hope (the op has already been recorded). The
# error names the op and says what to do instead.

# %%
h = w * 2
try:
    h.requires_grad_(False)
except RuntimeError as error:  # NonLeafRequiresGradError subclasses RuntimeError
    print(f"{type(error).__name__}: {error}")

# %% [markdown]
# The two fixes the message suggests:
#
# - you wanted `h`'s gradient: call `h.retain_grad()` (section 2);
# - you wanted to stop gradient at `h`, or start a new trainable tensor from its value:
#   `h.detach()` gives a new leaf sharing `h`'s memory, outside the graph; add
#   `.requires_grad_()` to make it trainable.

# %%
stopped = h.detach()
print("detach():            is_leaf", stopped.is_leaf, "requires_grad", stopped.requires_grad)
restarted = h.detach().requires_grad_()
print("detach().requires_grad_(): is_leaf", restarted.is_leaf, "requires_grad", restarted.requires_grad)

# %% [markdown]
# ## 4. `detach()` cuts the graph
#
# `y` below uses `w` twice: once directly, once through a detached copy. Backward reaches `w`
# only along the attached path, so the detached branch counts as a constant. The drawing shows a
# single edge from `w`.

# %%
w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
frozen = (w * w).detach()  # a constant as far as backward is concerned
y = (w * frozen).sum()  # dy/dw = frozen = w*w, not 3*w*w
display(draw_graph(y, params={"w": w}))
y.backward()
print("w.grad =", w.grad, "= w*w, the detached factor counted as a constant")

# %% [markdown]
# `detach()` shares memory with the original: changing one changes the other. numdiff keeps a
# version counter per storage, and backward refuses to use a saved tensor that was modified in
# place after it was saved.

# %%
a = numdiff.tensor([1.0, 2.0], requires_grad=True)
b = a.exp()  # exp saves its result for backward
with numdiff.no_grad():
    b.detach().mul_(0)  # same memory as b
try:
    b.sum().backward()
except RuntimeError as error:
    print(f"{type(error).__name__}: {error}")

# %% [markdown]
# ## 5. Gradients accumulate: `+=`, never `=`
#
# Backward *adds* into `.grad`. That is the chain rule's sum when a leaf is used several times,
# and it is also what happens across several `backward()` calls, which is why training loops
# zero the gradients every step (`optimizer.zero_grad()`).

# %%
w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
for step in range(3):
    (w * 2).sum().backward()
    print(f"after backward #{step + 1}: w.grad = {w.grad}")

w.grad = None  # what zero_grad() does by default (set_to_none=True)
(w * 2).sum().backward()
print("after zeroing and one more backward:", w.grad)

# %% [markdown]
# Zeroing in place (`w.grad.zero_()`) also works; setting `None` skips a memory write and lets the
# next backward allocate fresh. Using a leaf twice in one expression sums both paths:

# %%
x = numdiff.tensor([3.0], requires_grad=True)
(x * x).sum().backward()  # d(x^2)/dx = x + x: one contribution per use
print("x.grad =", x.grad)
draw_graph(x * x, params={"x": x})

# %% [markdown]
# ## 6. Hooks: watching (or changing) a gradient in flight
#
# `t.register_hook(fn)` calls `fn(grad)` when `t`'s gradient is computed. Returning a tensor
# replaces the gradient. It works on intermediates (where the gradient is otherwise thrown away)
# and on leaves (before it is added to `.grad`). The returned handle removes the hook. A drawing
# lists the hooks on each node.

# %%
w = numdiff.tensor([1.0, -2.0, 3.0], requires_grad=True)
h = w * 5
seen = []
watch = h.register_hook(lambda grad: seen.append(grad.clone()))  # observe only
clip = w.register_hook(lambda grad: grad.clamp(-1.0, 1.0))  # replace: clip w's gradient
out = (h * h).sum()
display(draw_graph(out, params={"w": w}))
out.backward()
print("gradient reaching h:", seen[0])
print("w.grad, clipped by the hook:", w.grad)

watch.remove()
clip.remove()
w.grad = None
(w * 5 * w * 5).sum().backward()
print("without hooks, w.grad =", w.grad)

# %% [markdown]
# ## 7. Updating weights: in place under `no_grad`, not `w = w - lr * w.grad`
#
# A leaf that requires grad cannot be changed in place while autograd records (the op that used
# its old value may need it for backward):

# %%
w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
(w * w).sum().backward()
try:
    w -= 0.1 * w.grad
except RuntimeError as error:  # InPlaceOnLeafError
    print(f"{type(error).__name__}: {error}")

# %% [markdown]
# **Right:** update in place inside `numdiff.no_grad()`. Nothing is recorded, `w` stays the same
# leaf object, and its version counter records the change. This is what every optimizer does.

# %%
lr = 0.1
w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
for step in range(3):
    loss = (w * w).sum()
    loss.backward()
    with numdiff.no_grad():
        w -= lr * w.grad
    w.grad = None
    print(f"step {step}: w = {w}, is_leaf = {w.is_leaf}")

# %% [markdown]
# **Wrong:** `w = w - lr * w.grad` outside `no_grad` builds a *new* tensor made by an operation.
# The name `w` now points at a non-leaf whose `.grad` stays `None` forever, so the second step has
# no gradient to use, and the graph grows with every step:

# %%
original_w = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = original_w
loss = (w * w).sum()
loss.backward()
w = w - lr * w.grad  # rebinding: w is now the output of SubBackward
print("is_leaf:", w.is_leaf, "| grad_fn:", w.grad_fn)
loss = (w * w).sum()
loss.backward()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    print("w.grad after the next backward:", w.grad, "<- nothing to update with")
print("the gradient flowed on to the original leaf (added to its first one):", original_w.grad)
draw_graph(loss, params={"original w": original_w})

# %% [markdown]
# ## 8. Freezing part of a model
#
# A module's parameters are leaves (`Parameter` is a tensor with `requires_grad=True` that the
# module registers). Freezing a layer is the leaf rule applied: switch `requires_grad` off on
# its parameters. The frozen weights drop out of the graph, so backward neither visits them nor
# computes their gradients (a real saving, not just "the optimizer skips them").

# %%
layers = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
for p in layers[0].parameters():
    p.requires_grad_(False)  # freeze the first layer
x = numdiff.randn(3, 4)
hidden = layers[1](layers[0](x))  # the frozen Linear, then the ReLU
scores = layers[2](hidden)  # the trainable Linear
out = scores.sum()
print("after the frozen layer:    requires_grad =", hidden.requires_grad, "| grad_fn =", hidden.grad_fn)
inputs = [node.name() for node, _ in scores.grad_fn.next_functions if node is not None]
print("after the trainable layer: grad_fn =", scores.grad_fn, "| its inputs' nodes:", inputs)
display(draw_graph(out, params=dict(layers.named_parameters())))
out.backward()
for name, p in layers.named_parameters():
    print(f"{name:9s} requires_grad={p.requires_grad!s:5s} grad={'None' if p.grad is None else 'set'}")

# %% [markdown]
# `nn.Linear` records one operation, `LinearBackward` (`x @ weight.T + bias` in one GEMM), whose
# weight and bias leaves are reached through `AccumulateGrad` nodes (the node that adds into a
# leaf's `.grad`). The frozen first layer
# recorded **nothing**: neither its input `x` nor its weights require grad, so its output does
# not either (`grad_fn` is `None`), and neither does the ReLU's. The drawing therefore starts at
# the second layer, with no box for `0.weight` and `0.bias`, and only `2.weight` and `2.bias`
# receive gradients.
#
# ## 9. Gradients with respect to the *input*
#
# Nothing makes weights special: backward fills `.grad` of **any** leaf that requires grad. Make
# the *image* a leaf that requires grad and freeze the model, and backward tells you how the
# output changes with each pixel. Two classic uses, on a small CNN trained on scikit-learn's 8 x 8
# digits (the model of `02_train_cnn.ipynb`, trained briefly here):


# %%
class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8), pixels in [0, 1]
labels = digits.target.astype(np.int64)
n_train = 400 if SMALL else 1500
x_train, y_train = numdiff.tensor(images[:n_train]), numdiff.tensor(labels[:n_train])
x_test, y_test = numdiff.tensor(images[1500:]), numdiff.tensor(labels[1500:])

model = DigitsCNN()
optimizer = numdiff.optim.Adam(model.parameters(), lr=3e-3)
for _ in range(2 if SMALL else 20):
    for start in range(0, n_train, 64):
        loss = nn.functional.cross_entropy(model(x_train[start : start + 64]), y_train[start : start + 64])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
model.eval()
optimizer.zero_grad()  # training left gradients in the weights' .grad: clear them
with numdiff.no_grad():
    test_accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
print(f"test accuracy: {test_accuracy:.3f}")

for p in model.parameters():
    p.requires_grad_(False)  # freeze the model: only the input will be a leaf that requires grad

# %% [markdown]
# ### A saliency map
#
# Which pixels does the score of the true class depend on most? The gradient of that score with
# respect to the image answers it (Simonyan et al., 2014): large |gradient| = a pixel that moves
# the score.

# %%
x = x_test[:6].clone().requires_grad_()  # a new leaf: the images themselves
scores = model(x)
scores.gather(1, y_test[:6].unsqueeze(1)).sum().backward()
saliency = x.grad.abs().numpy()[:, 0]

fig, axes = plt.subplots(2, 6, figsize=(9, 3.2))
for i in range(6):
    axes[0, i].imshow(images[1500 + i, 0], cmap="gray_r")
    axes[0, i].set_title(f"digit {labels[1500 + i]}")
    axes[1, i].imshow(saliency[i], cmap="hot")
    for ax in axes[:, i]:
        ax.axis("off")
axes[1, 0].set_title("|d score / d pixel|", fontsize=8, loc="left")
plt.tight_layout()
plt.show()
print(
    "x.is_leaf:",
    x.is_leaf,
    "| model weights got gradients:",
    any(p.grad is not None for p in model.parameters()),
)

# %% [markdown]
# ### An adversarial example (FGSM)
#
# The fast gradient sign method (Goodfellow et al., 2015) nudges every pixel by $\varepsilon$ in
# the direction that *increases* the loss: $x_{adv} = x + \varepsilon \cdot
# \mathrm{sign}(\nabla_x L)$. A change too small to alter the digit for a person can flip the
# model's answer.

# %%
x = x_test.clone().requires_grad_()
loss = nn.functional.cross_entropy(model(x), y_test)
loss.backward()
direction = x.grad.sign()

epsilons = [0.0, 0.05, 0.1, 0.2, 0.3]
accuracies = []
with numdiff.no_grad():
    for eps in epsilons:
        x_adv = (x + eps * direction).clamp(0.0, 1.0)
        accuracies.append((model(x_adv).argmax(1) == y_test).float().mean().item())
    adversarial = (x + 0.1 * direction).clamp(0.0, 1.0)
    clean_predicted = model(x).argmax(1).numpy()
    adversarial_predicted = model(adversarial).argmax(1).numpy()
true = y_test.numpy()
# Show a digit the model gets right that the attack turns into a wrong answer.
flipped = np.flatnonzero((clean_predicted == true) & (adversarial_predicted != true))
shown = int(flipped[0]) if len(flipped) else 0

fig, (ax_curve, ax_clean, ax_adv) = plt.subplots(1, 3, figsize=(10, 3))
ax_curve.plot(epsilons, accuracies, "-o")
ax_curve.set(xlabel="epsilon", ylabel="test accuracy", title="FGSM: accuracy against epsilon", ylim=(0, 1))
ax_clean.imshow(x[shown, 0].detach().numpy(), cmap="gray_r", vmin=0, vmax=1)
ax_clean.set_title(f"clean image of a {true[shown]}: predicted {clean_predicted[shown]}")
ax_adv.imshow(adversarial[shown, 0].numpy(), cmap="gray_r", vmin=0, vmax=1)
ax_adv.set_title(f"epsilon 0.1: predicted {adversarial_predicted[shown]}")
for ax in (ax_clean, ax_adv):
    ax.axis("off")
plt.tight_layout()
plt.show()
print("accuracy per epsilon:", dict(zip(epsilons, [round(a, 3) for a in accuracies])))

# %% [markdown]
# ## 10. Second derivatives
#
# `numdiff.autograd.grad(y, x, create_graph=True)` returns the gradient as a tensor *with its own
# graph* (the backward pass was recorded), so it can be differentiated again. For
# $y = x^3$: $dy/dx = 3x^2$ and $d^2y/dx^2 = 6x$.

# %%
x = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = (x**3).sum()
(dy_dx,) = numdiff.autograd.grad(y, x, create_graph=True)
print("dy/dx   =", dy_dx, "(3x^2)")
print("dy/dx is a leaf?", dy_dx.is_leaf, "| made by", dy_dx.grad_fn)
display(draw_graph(dy_dx.sum(), params={"x": x}))
(d2y_dx2,) = numdiff.autograd.grad(dy_dx.sum(), x)
print("d2y/dx2 =", d2y_dx2, "(6x)")

# %% [markdown]
# The drawing above is the graph of the *backward pass* of `x**3`: the operations that computed
# $3x^2$, recorded because of `create_graph=True`. `x` is still the only leaf.
#
# ## Remember this
#
# - A **leaf** is a tensor you created (or a `Parameter`), not one an operation produced:
#   `t.is_leaf` is `t.grad_fn is None`.
# - Only leaves with `requires_grad=True` keep `.grad`, and it **accumulates** until you reset it.
# - Intermediates pass gradient along and keep nothing, unless they called `retain_grad()`.
# - Only leaves can switch `requires_grad`; for anything an op made use `retain_grad()` or
#   `detach()`.
# - Update weights **in place under `no_grad()`**; `w = w - lr * w.grad` silently turns `w` into
#   a non-leaf.
# - When `.grad` is unexpectedly `None`, print `t.is_leaf, t.requires_grad` and draw the graph.
