"""SyncBatchNorm: batch normalisation whose statistics cover the whole batch across all ranks.

Under data parallelism each rank sees a part of the batch. SyncBatchNorm sums the per-channel
counts and sums over ranks to get the global mean, then the squared deviations from it to get the
global (biased) variance, both with the differentiable all_reduce, so backward exchanges the
matching gradient terms and the result equals BatchNorm on the concatenated batch. Outside
training, or without a process group of more than one rank, it is plain BatchNorm.
"""

from __future__ import annotations

import numpy as np

from numdiff.autograd.grad_mode import no_grad
from numdiff.nn.modules.module import Module
from numdiff.nn.modules.normalization import _BatchNorm
from numdiff.tensor import Tensor


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over (N, C, ...) inputs with statistics over every rank's batch.

    >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(model)   # before DistributedDataParallel
    """

    _expected = "(N, {c}, ...)"
    _ndims = (2, 3, 4, 5)

    def forward(self, input: Tensor) -> Tensor:
        from numdiff.distributed import _group

        group = _group._group
        if not self.training or group is None or group.size == 1:
            return super().forward(input)
        from numdiff.distributed.nn.functional import _all_reduce_sum

        if input.ndim not in self._ndims or input.shape[1] != self.num_features:
            return super().forward(input)  # raises the shape error
        dims = (0,) + tuple(range(2, input.ndim))
        shape = (1, self.num_features) + (1,) * (input.ndim - 2)
        local_count = input.numel() // self.num_features
        count = int(_all_reduce_sum(Tensor._wrap(np.array(local_count, np.int64), None, None), group.sync_comm))
        if count <= 1:
            raise ValueError(
                f"SyncBatchNorm: expected more than 1 value per channel when training, got {count} "
                f"over all ranks (input of shape {tuple(input.shape)} on this rank)"
            )
        mean = _all_reduce_sum(input.sum(dims), group.sync_comm) / count
        centred = input - mean.reshape(shape)
        var = _all_reduce_sum((centred * centred).sum(dims), group.sync_comm) / count
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
                factor = self.momentum
                if factor is None:
                    factor = 1.0 / float(self.num_batches_tracked.item())
                self.running_mean.mul_(1 - factor).add_(mean.detach().to(self.running_mean.dtype) * factor)
                unbiased = var.detach().to(self.running_var.dtype) * (count / (count - 1))
                self.running_var.mul_(1 - factor).add_(unbiased * factor)
        out = centred / (var.reshape(shape) + self.eps).sqrt()
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: object = None) -> Module:
        """Return `module` with every BatchNorm layer replaced by a SyncBatchNorm sharing its state."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(
                module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats
            )
            for name in ("weight", "bias"):
                converted._parameters[name] = module._parameters.get(name)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                converted._buffers[name] = module._buffers.get(name)
            converted.train(module.training)
            return converted
        for name, child in list(module.named_children()):
            module.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return module
