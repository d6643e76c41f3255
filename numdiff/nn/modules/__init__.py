"""The layers of numdiff.nn, each a Module."""

from numdiff.nn.modules.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from numdiff.nn.modules.attention import MultiheadAttention
from numdiff.nn.modules.container import ModuleDict, ModuleList, Sequential
from numdiff.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from numdiff.nn.modules.distance import CosineSimilarity, PairwiseDistance
from numdiff.nn.modules.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from numdiff.nn.modules.extra_layers import AlphaDropout, EmbeddingBag, FeatureAlphaDropout, LocalResponseNorm
from numdiff.nn.modules.im2col import Fold, Unfold
from numdiff.nn.modules.lazy import (
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
)
from numdiff.nn.modules.linear import Bilinear, Flatten, Identity, Linear, Unflatten
from numdiff.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from numdiff.nn.modules.module import Module
from numdiff.nn.modules.more_layers import (
    AdaptiveMaxPool1d,
    ChannelShuffle,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
    MultiLabelMarginLoss,
    NLLLoss2d,
    Softmax2d,
    TripletMarginWithDistanceLoss,
)
from numdiff.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    RMSNorm,
)
from numdiff.nn.modules.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from numdiff.nn.modules.parameter_containers import ParameterDict, ParameterList
from numdiff.nn.modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from numdiff.nn.modules.resampling import (
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from numdiff.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from numdiff.nn.modules.sparse import Embedding
from numdiff.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "Bilinear", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "CrossEntropyLoss", "Dropout", "ELU", "Embedding",
    "Flatten", "GELU", "Identity", "L1Loss", "LayerNorm", "RMSNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss",
    "MaxPool1d", "MaxPool2d", "Module", "ModuleDict", "ModuleList", "NLLLoss", "ReLU", "Sequential", "Sigmoid",
    "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "Unflatten",
]
__all__ += ["CELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish", "ReLU6", "SELU", "SiLU", "Softmin", "Softshrink", "Softsign", "Tanhshrink", "Threshold"]
__all__ += ["Dropout1d", "Dropout2d", "Dropout3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d"]
__all__ += [
    "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "Conv3d", "ConvTranspose3d", "InstanceNorm3d", "MaxPool3d",
    "LPPool3d", "MaxUnpool3d",
]
__all__ += ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
__all__ += ["CosineSimilarity", "PairwiseDistance"]
__all__ += ["PReLU", "RReLU"]
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]
__all__ += ["MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer"]
__all__ += [
    "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "MarginRankingLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
]
__all__ += ["ParameterDict", "ParameterList"]
__all__ += ["Fold", "Unfold"]
__all__ += ["AlphaDropout", "EmbeddingBag", "FeatureAlphaDropout", "LocalResponseNorm"]
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
]
