"""ONNX import: `ModelGen` parses an ONNX file and writes a Python module plus a record of its weights."""
