"""The Burn Book's Basic Workflow guide in Python: a CNN trained on MNIST
with the Learner, then used for inference.

| file | the book's | what it holds |
| --- | --- | --- |
| `model.py` | `src/model.rs` | `Model`, `ModelConfig` (and the Learner's steps) |
| `data.py` | `src/data.rs` | `MnistBatch`, `MnistBatcher` |
| `training.py` | `src/training.rs` | `TrainingConfig`, `train`, `evaluate` |
| `inference.py` | `src/inference.rs` | `infer`, `load_model` |
| `__main__.py` | `src/main.rs` | the command line |

From a terminal (MNIST is read from `$BURNBOOK_DATA`, else the user cache
folder, where it is downloaded)::

    python -m burnbook.examples.guide --epochs 3

The notebook `notebooks/en/04-guide.ipynb` walks through the same code.
"""

from .data import MNIST_MEAN, MNIST_STD, MnistBatch, MnistBatcher
from .inference import infer, load_model
from .model import Model, ModelConfig
from .training import Evaluation, TrainingConfig, evaluate, train

__all__ = [
    "Model", "ModelConfig", "MnistBatch", "MnistBatcher", "MNIST_MEAN", "MNIST_STD",
    "TrainingConfig", "train", "evaluate", "Evaluation", "infer", "load_model",
]
