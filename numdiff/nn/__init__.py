"""numdiff.nn: Module, Parameter, layers, losses, initialisation and the functional API.

>>> import numdiff.nn as nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> loss = nn.CrossEntropyLoss()(model(numdiff.randn(2, 4)), numdiff.tensor([0, 2]))
"""

from numdiff.nn import (
    functional,
    init,
    parallel,  # noqa: E402 - builds on the modules above
    utils,  # noqa: E402 - utils builds on the modules above
)
from numdiff.nn.modules import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AlphaDropout,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    BCELoss,
    BCEWithLogitsLoss,
    Bilinear,
    ChannelShuffle,
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    CosineEmbeddingLoss,
    CosineSimilarity,
    CrossEntropyLoss,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    Embedding,
    EmbeddingBag,
    FeatureAlphaDropout,
    Flatten,
    Fold,
    GaussianNLLLoss,
    GroupNorm,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    HingeEmbeddingLoss,
    HuberLoss,
    Identity,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    KLDivLoss,
    L1Loss,
    LayerNorm,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
    LeakyReLU,
    Linear,
    LocalResponseNorm,
    LogSigmoid,
    LogSoftmax,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MarginRankingLoss,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
    Mish,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    NLLLoss2d,
    PairwiseDistance,
    ParameterDict,
    ParameterList,
    PixelShuffle,
    PixelUnshuffle,
    PoissonNLLLoss,
    PReLU,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReLU,
    ReLU6,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    RMSNorm,
    RReLU,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    SoftMarginLoss,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
    Unflatten,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from numdiff.nn.modules.attention import MultiheadAttention
from numdiff.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from numdiff.nn.modules.sync_batchnorm import SyncBatchNorm
from numdiff.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from numdiff.nn.parallel import DataParallel
from numdiff.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "ELU", "GELU", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "Bilinear", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "CrossEntropyLoss", "Dropout", "Embedding",
    "Flatten", "Identity", "L1Loss", "LayerNorm", "RMSNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool1d",
    "MaxPool2d", "Module", "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid",
    "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "Unflatten", "functional", "init", "utils",
    "SyncBatchNorm", "parallel",
]
__all__ += ["CELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish", "ReLU6", "SELU", "SiLU", "Softmin", "Softshrink", "Softsign", "Tanhshrink", "Threshold"]
__all__ += ["Dropout1d", "Dropout2d", "Dropout3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d"]
__all__ += ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
__all__ += ["CosineSimilarity", "PairwiseDistance"]
__all__ += ["PReLU", "RReLU"]
__all__ += ["DataParallel"]
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]
__all__ += ["MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer"]
__all__ += [
    "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "MarginRankingLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
]
__all__ += ["ParameterDict", "ParameterList"]
__all__ += ["Fold", "Unfold"]
__all__ += [
    "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "Conv3d", "ConvTranspose3d", "InstanceNorm3d", "LPPool3d",
    "MaxPool3d", "MaxUnpool3d",
]
__all__ += ["AlphaDropout", "EmbeddingBag", "FeatureAlphaDropout", "LocalResponseNorm"]
__all__ += ["Buffer"]
__all__ += [
    "AdaptiveMaxPool1d",
    "ChannelShuffle",
    "LPPool1d",
    "LPPool2d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose3d",
    "LazyBatchNorm3d",
    "LazyInstanceNorm3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyLinear",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MultiLabelMarginLoss",
    "NLLLoss2d",
    "Softmax2d",
    "TripletMarginWithDistanceLoss",
    "UninitializedBuffer",
    "UninitializedParameter",
]

__all__ += [name for name in ("functional", "init", "utils") if name not in __all__]


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
