"""numdiff.optim: optimizers that update parameters in place with fused Numba kernels, and
learning-rate schedulers (``numdiff.optim.lr_scheduler``), as in ``torch.optim``."""

from numdiff.optim import lr_scheduler, swa_utils
from numdiff.optim.adadelta import Adadelta
from numdiff.optim.adafactor import Adafactor
from numdiff.optim.adagrad import Adagrad
from numdiff.optim.adam import Adam, AdamW
from numdiff.optim.adamax import Adamax
from numdiff.optim.asgd import ASGD
from numdiff.optim.lbfgs import LBFGS
from numdiff.optim.nadam import NAdam
from numdiff.optim.optimizer import Optimizer
from numdiff.optim.radam import RAdam
from numdiff.optim.rmsprop import RMSprop
from numdiff.optim.rprop import Rprop
from numdiff.optim.sgd import SGD
from numdiff.optim.sparse_adam import SparseAdam

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
__all__ += ["LBFGS", "Adadelta", "Adamax", "NAdam", "RAdam"]
__all__ += ["ASGD", "Rprop", "swa_utils", "Adafactor", "SparseAdam"]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
