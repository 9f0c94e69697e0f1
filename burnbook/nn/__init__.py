"""Built-in layers, initializers and losses (Burn's `burn::nn`).

Every layer is a `Module` built by its `@config` class:
`nn.LinearConfig(784, 10).init(device)`. `init` takes an optional
`backend=`; left out, layers are built on the autodiff backend over the
device's backend, ready to train (see `burnbook.nn.common`).

Configs check their settings on construction, on loading and at `init`:
every size and count must be >= 1 (PyTorch accepts `in_features=0` and
builds an empty layer; here it is a mistake caught early), paddings and
epsilons >= 0, probabilities in [0, 1]. A bad one is a `ConfigError`
naming the config class, the field and the value.

    from burnbook import nn
    linear = nn.LinearConfig(784, 10).init(device)
    loss = nn.loss.CrossEntropyLossConfig().init(device).forward(logits, targets)
"""

from . import loss
from .activation import (
    GELU, Gelu, LeakyRelu, LeakyReluConfig, Mish, PRelu, PReluConfig, ReLU, Relu, Sigmoid, Silu,
    Softplus, Tanh,
)
from .attention import (
    GeneratePaddingMask, MhaInput, MhaOutput, MultiHeadAttention, MultiHeadAttentionConfig,
    generate_autoregressive_mask, generate_padding_mask,
)
from .cache import MhaCache, TensorCache, TransformerEncoderAutoregressiveCache
from .common import resolve_backend
from .dropout import Dropout, DropoutConfig
from .initializer import Initializer
from .linear import Embedding, EmbeddingConfig, Linear, LinearConfig
from .loss import (
    BinaryCrossEntropyLoss, BinaryCrossEntropyLossConfig, CrossEntropyLoss, CrossEntropyLossConfig,
    HuberLoss, HuberLossConfig, MSELoss, MseLoss, Reduction,
)
from .norm import (
    BatchNorm, BatchNormConfig, GroupNorm, GroupNormConfig, LayerNorm, LayerNormConfig, RmsNorm, RmsNormConfig,
)
from .pos_encoding import PositionalEncoding, PositionalEncodingConfig, generate_sinusoids
from .rotary import RotaryEncoding, RotaryEncodingConfig
from .swiglu import SwiGlu, SwiGluConfig
from .rnn import GateController, Gru, GruConfig, Lstm, LstmConfig
from .transformer import (
    PositionWiseFeedForward, PositionWiseFeedForwardConfig, TransformerDecoder, TransformerDecoderConfig,
    TransformerDecoderInput, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderConfig,
    TransformerEncoderInput, TransformerEncoderLayer,
)

from .conv import (
    Conv1d, Conv1dConfig, Conv2d, Conv2dConfig, ConvTranspose1d, ConvTranspose1dConfig, ConvTranspose2d,
    ConvTranspose2dConfig,
)
from .padding import PaddingConfig1d, PaddingConfig2d
from .pool import (
    AdaptiveAvgPool1d, AdaptiveAvgPool1dConfig, AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, AvgPool1d,
    AvgPool1dConfig, AvgPool2d, AvgPool2dConfig, MaxPool1d, MaxPool1dConfig, MaxPool2d, MaxPool2dConfig,
)

__all__ = [
    # initialisation and helpers
    "Initializer", "resolve_backend",
    # general
    "Linear", "LinearConfig", "Embedding", "EmbeddingConfig", "Dropout", "DropoutConfig",
    "BatchNorm", "BatchNormConfig", "LayerNorm", "LayerNormConfig", "GroupNorm", "GroupNormConfig",
    "RmsNorm", "RmsNormConfig",
    # activations
    "Relu", "ReLU", "Gelu", "GELU", "Sigmoid", "Tanh", "Silu", "Mish", "Softplus",
    "LeakyRelu", "LeakyReluConfig", "PRelu", "PReluConfig",
    # convolution and pooling
    "Conv1d", "Conv1dConfig", "Conv2d", "Conv2dConfig", "ConvTranspose1d", "ConvTranspose1dConfig",
    "ConvTranspose2d", "ConvTranspose2dConfig", "PaddingConfig1d", "PaddingConfig2d",
    "MaxPool1d", "MaxPool1dConfig", "MaxPool2d", "MaxPool2dConfig", "AvgPool1d", "AvgPool1dConfig",
    "AvgPool2d", "AvgPool2dConfig", "AdaptiveAvgPool1d", "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d", "AdaptiveAvgPool2dConfig",
    # recurrent
    "GateController", "Lstm", "LstmConfig", "Gru", "GruConfig",
    # attention and transformer
    "MultiHeadAttention", "MultiHeadAttentionConfig", "MhaInput", "MhaOutput",
    "generate_autoregressive_mask", "generate_padding_mask", "GeneratePaddingMask",
    "MhaCache", "TensorCache", "TransformerEncoderAutoregressiveCache",
    "PositionWiseFeedForward", "PositionWiseFeedForwardConfig",
    "TransformerEncoder", "TransformerEncoderConfig", "TransformerEncoderLayer", "TransformerEncoderInput",
    "TransformerDecoder", "TransformerDecoderConfig", "TransformerDecoderLayer", "TransformerDecoderInput",
    "PositionalEncoding", "PositionalEncodingConfig", "generate_sinusoids",
    # Llama-style blocks
    "RotaryEncoding", "RotaryEncodingConfig", "SwiGlu", "SwiGluConfig",
    # losses (also under nn.loss, as in Burn)
    "loss", "Reduction", "CrossEntropyLoss", "CrossEntropyLossConfig", "MseLoss", "MSELoss",
    "BinaryCrossEntropyLoss", "BinaryCrossEntropyLossConfig", "HuberLoss", "HuberLossConfig",
]
