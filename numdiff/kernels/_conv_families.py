"""The conv2d core families (numdiff.kernels.conv): for each route, its compiled core per
kind ("forward", "backward_input", "backward_weight"), each a serial and a parallel build that
``.pick(macs, threshold)`` chooses between. numdiff.kernels.conv's plan picks the route; a new
route adds its table here.

im2col (CORES), im2col over several images per GEMM (BATCHED_CORES), direct 3x3 loop nests
(DIRECT_CORES), grouped direct loops (GROUPED_CORES), depthwise loops
(DEPTHWISE_CORES) and Winograd F(2x2, 3x3) (WINOGRAD_CORES).
"""

from __future__ import annotations

from numdiff.kernels._conv_batched import (
    batched_backward_input_core,
    batched_backward_weight_core,
    batched_forward_core,
)
from numdiff.kernels._conv_cores import backward_input_core, backward_weight_core, forward_core
from numdiff.kernels._conv_depthwise import (
    depthwise_backward_input_core,
    depthwise_backward_weight_core,
    depthwise_forward_core,
)
from numdiff.kernels._conv_direct import direct_backward_weight_core
from numdiff.kernels._conv_direct_forward import direct_backward_input_core, direct_forward_core
from numdiff.kernels._conv_grouped import (
    grouped_backward_input_core,
    grouped_backward_weight_core,
    grouped_forward_core,
)
from numdiff.kernels._winograd import (
    winograd_backward_input_core,
    winograd_backward_weight_core,
    winograd_forward_core,
)

__all__ = ["BATCHED_CORES", "CORES", "DEPTHWISE_CORES", "DIRECT_CORES", "GROUPED_CORES", "WINOGRAD_CORES"]

CORES = {
    "forward": forward_core,
    "backward_input": backward_input_core,
    "backward_weight": backward_weight_core,
}
BATCHED_CORES = {
    "forward": batched_forward_core,
    "backward_input": batched_backward_input_core,
    "backward_weight": batched_backward_weight_core,
}
DIRECT_CORES = {
    "forward": direct_forward_core,
    "backward_input": direct_backward_input_core,
    "backward_weight": direct_backward_weight_core,
}
GROUPED_CORES = {
    "forward": grouped_forward_core,
    "backward_input": grouped_backward_input_core,
    "backward_weight": grouped_backward_weight_core,
}
DEPTHWISE_CORES = {
    "forward": depthwise_forward_core,
    "backward_input": depthwise_backward_input_core,
    "backward_weight": depthwise_backward_weight_core,
}
WINOGRAD_CORES = {
    "forward": winograd_forward_core,
    "backward_input": winograd_backward_input_core,
    "backward_weight": winograd_backward_weight_core,
}
