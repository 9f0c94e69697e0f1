"""Model import: ONNX graphs turned into Python modules, and PyTorch weights
read without executing pickled code."""
