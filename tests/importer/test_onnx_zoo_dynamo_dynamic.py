"""The dynamo exporter's dynamic-batch exports of the ONNX architecture zoo
(see test_onnx_zoo.py and test_onnx_zoo_dynamo.py, which says why this is a
file of its own)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from .test_onnx_zoo import folder, zoo_table  # noqa: E402, F401 - `folder` is a fixture


def test_zoo_dynamo_dynamic_exports_import_and_match_onnxruntime(folder):  # noqa: F811
    zoo_table("dynamo", folder, dynamic=True)
