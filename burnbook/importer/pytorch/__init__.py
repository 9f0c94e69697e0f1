"""PyTorch weight import: `.pt` archives read by a restricted unpickler, and safetensors files."""
