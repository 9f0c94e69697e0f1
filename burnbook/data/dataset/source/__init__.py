"""Dataset sources (Burn's `dataset::source`): Hugging Face."""

from .huggingface import HuggingfaceDatasetLoader, store_splits

__all__ = ["HuggingfaceDatasetLoader", "store_splits"]
