"""The CTC loss layer (a module of its own: numdiff.nn.modules.loss holds the losses over pointwise
and class targets)."""

from __future__ import annotations

from numdiff.nn import _ctc_loss
from numdiff.nn.modules.loss import _Loss
from numdiff.tensor import Tensor


class CTCLoss(_Loss):
    """ctc_loss(log_probs, targets, input_lengths, target_lengths): connectionist temporal
    classification of (T, N, C) log-probabilities against unaligned targets, as torch.nn.CTCLoss.

    >>> loss = CTCLoss()(numdiff.randn(30, 2, 5).log_softmax(2), numdiff.tensor([[1, 2, 2], [3, 4, 0]]), [30, 25], [3, 2])
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(
        self,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: _ctc_loss.Lengths,
        target_lengths: _ctc_loss.Lengths,
    ) -> Tensor:
        return _ctc_loss.ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity
        )
