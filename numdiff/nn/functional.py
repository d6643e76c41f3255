"""numdiff.nn.functional: PyTorch's functional API (activations here; layers and losses join)."""

from numdiff.ops.activation import elu, gelu, leaky_relu, log_softmax, relu, softmax, softplus
from numdiff.ops.unary import sigmoid, tanh

__all__ = ["elu", "gelu", "leaky_relu", "log_softmax", "relu", "sigmoid", "softmax", "softplus", "tanh"]
