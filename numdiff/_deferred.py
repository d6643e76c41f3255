"""What `import numdiff` leaves for later: the subpackages beyond the core (tensor, creation, ops,
autograd) and the top-level names they give numdiff (``numdiff.conv2d``, ``numdiff.compile``,
``numdiff.save``). numdiff/__init__.py's PEP 562 ``__getattr__`` loads one on its first access, so
``numdiff.nn.Linear``, ``from numdiff import fx`` and ``import numdiff.onnx`` work as before, and
``dir(numdiff)`` lists the same names, while a script that only builds tensors loads none of them.

The names are written out here, not read from the subpackages (that would import them);
tests/core/test_import_cost.py checks them against the subpackages' own tables.
"""

from __future__ import annotations

import importlib

# numdiff.<name> is a subpackage or module loaded on first access (numdiff.compile is the function,
# in ATTRIBUTES).
SUBMODULES = frozenset({
    "benchmark", "distributed", "distributions", "func", "fx", "hub", "jit", "nn", "onnx", "optim",
    "safetensors", "serialization", "sparse", "testing", "utils", "viz",
})  # fmt: skip

# numdiff.<name> is the attribute of the same name of a module, loaded on first access.
ATTRIBUTES = {
    "compile": "numdiff.compile",
    "vmap": "numdiff.func",
    "warmup": "numdiff.jit",
    "load": "numdiff.serialization",
    "save": "numdiff.serialization",
    "from_dlpack": "numdiff.utils.dlpack",
    "elementwise": "numdiff._elementwise",
    "sparse_coo": "numdiff.sparse",
    "sparse_coo_tensor": "numdiff.sparse",
    "sparse_csr": "numdiff.sparse",
    "sparse_csr_tensor": "numdiff.sparse",
    "spmm": "numdiff.sparse",
    "strided": "numdiff.sparse",
}

# numdiff.<name> from numdiff.nn._toplevel.FUNCTIONS (torch.conv2d, torch.dropout, ...): the names
# of that table that the core does not define itself.
NN_FUNCTIONS = (
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "alpha_dropout", "alpha_dropout_", "avg_pool1d", "batch_norm",
    "bilinear", "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_embedding_loss",
    "cosine_similarity", "dropout", "dropout_", "embedding", "feature_alpha_dropout", "feature_alpha_dropout_",
    "feature_dropout", "feature_dropout_", "group_norm", "hardshrink", "hinge_embedding_loss", "instance_norm",
    "kl_div", "layer_norm", "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
    "max_pool3d", "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu",
    "rms_norm", "rrelu", "rrelu_", "selu", "selu_", "threshold", "triplet_margin_loss",
)  # fmt: skip

NAMES = frozenset(SUBMODULES) | frozenset(ATTRIBUTES) | frozenset(NN_FUNCTIONS)


def load(name: str) -> dict[str, object]:
    """The deferred names that loading `name` binds: `name` itself, or for a name of
    ``NN_FUNCTIONS`` all of them (one import gives them all). Raises KeyError for other names."""
    if name in ATTRIBUTES:
        return {name: getattr(importlib.import_module(ATTRIBUTES[name]), name)}
    if name in SUBMODULES:
        return {name: importlib.import_module(f"numdiff.{name}")}
    if name in NN_FUNCTIONS:
        table = importlib.import_module("numdiff.nn._toplevel").FUNCTIONS
        return {each: table[each] for each in NN_FUNCTIONS}
    raise KeyError(name)
