"""The guide's model (the book's `src/model.rs`): a small CNN for MNIST.

Two 3x3 convolutions (1 -> 8 -> 16 channels), adaptive average pooling to
8x8, then two linear layers (1024 -> hidden -> classes), with ReLU and
dropout in between, exactly in the book's order (no activation between the
two convolutions; dropout after each convolution and after the first linear
layer)::

    config = ModelConfig(num_classes=10, hidden_size=512)
    model = config.init(device)          # on Autodiff[NdArray] for a Cpu device
    logits = model(images)               # [batch, 28, 28] -> [batch, 10]

`Model` also implements the Learner's steps (Burn's `TrainStep` and
`ValidStep`): `train_step(batch)` returns a `TrainOutput` with the gradients,
`valid_step(batch)` a `ClassificationOutput`.
"""

from __future__ import annotations

from typing import Any

from burnbook import nn
from burnbook.config import config
from burnbook.module import Module
from burnbook.tensor import Tensor
from burnbook.train import ClassificationOutput, TrainOutput

__all__ = ["Model", "ModelConfig"]


class Model(Module):
    """The guide's CNN (fields as in the book's `Model<B>` struct)."""

    conv1: nn.Conv2d
    conv2: nn.Conv2d
    pool: nn.AdaptiveAvgPool2d
    dropout: nn.Dropout
    linear1: nn.Linear
    linear2: nn.Linear
    activation: nn.Relu

    def forward(self, images: Tensor) -> Tensor:
        """Images `[batch, height, width]` -> scores `[batch, num_classes]`."""
        batch_size, height, width = images.dims()
        # Create a channel at the second dimension.
        x = images.reshape([batch_size, 1, height, width])
        x = self.conv1(x)               # [batch, 8, 26, 26]
        x = self.dropout(x)
        x = self.conv2(x)               # [batch, 16, 24, 24]
        x = self.dropout(x)
        x = self.activation(x)
        x = self.pool(x)                # [batch, 16, 8, 8]
        x = x.reshape([batch_size, 16 * 8 * 8])
        x = self.linear1(x)
        x = self.dropout(x)
        x = self.activation(x)
        return self.linear2(x)          # [batch, num_classes]

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        """The scores, their cross-entropy loss against `targets` (Int
        `[batch]`), and the targets, as the Learner's metrics read them."""
        output = self.forward(images)
        loss = nn.CrossEntropyLoss.new(None).forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch: Any) -> TrainOutput:
        """Burn's `TrainStep::step`: forward, then backward on the loss."""
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: Any) -> ClassificationOutput:
        """Burn's `ValidStep::step` (runs on `model.valid()`: no autodiff)."""
        return self.forward_classification(batch.images, batch.targets)


@config
class ModelConfig:
    """The model's hyper-parameters; `init(device)` builds it."""

    num_classes: int
    hidden_size: int
    dropout: float = 0.5

    def init(self, device: Any = None, backend: type | None = None) -> Model:
        """A model with freshly initialised weights. On a `Cpu` device the
        backend defaults to `Autodiff[NdArray]`, ready to train; pass
        `backend=NdArray` for an inference-only model."""
        return Model(
            conv1=nn.Conv2dConfig([1, 8], [3, 3]).init(device, backend),
            conv2=nn.Conv2dConfig([8, 16], [3, 3]).init(device, backend),
            pool=nn.AdaptiveAvgPool2dConfig([8, 8]).init(),
            dropout=nn.DropoutConfig(self.dropout).init(),
            linear1=nn.LinearConfig(16 * 8 * 8, self.hidden_size).init(device, backend),
            linear2=nn.LinearConfig(self.hidden_size, self.num_classes).init(device, backend),
            activation=nn.Relu(),
        )

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> Model:
        """A model holding the weights of `record` (the book's `init_with`),
        e.g. `config.init_with(recorder.load(path), device, NdArray)`."""
        return Model(
            conv1=nn.Conv2dConfig([1, 8], [3, 3]).init_with(record.conv1, device, backend),
            conv2=nn.Conv2dConfig([8, 16], [3, 3]).init_with(record.conv2, device, backend),
            pool=nn.AdaptiveAvgPool2dConfig([8, 8]).init(),
            dropout=nn.DropoutConfig(self.dropout).init(),
            linear1=nn.LinearConfig(16 * 8 * 8, self.hidden_size).init_with(record.linear1, device, backend),
            linear2=nn.LinearConfig(self.hidden_size, self.num_classes).init_with(record.linear2, device,
                                                                                   backend),
            activation=nn.Relu(),
        )
