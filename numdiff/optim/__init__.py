"""numdiff.optim: optimizers that update parameters in place with fused Numba kernels, and
learning-rate schedulers (``numdiff.optim.lr_scheduler``), as in ``torch.optim``."""

from numdiff.optim import lr_scheduler
from numdiff.optim.adagrad import Adagrad
from numdiff.optim.adam import Adam, AdamW
from numdiff.optim.optimizer import Optimizer
from numdiff.optim.rmsprop import RMSprop
from numdiff.optim.sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
