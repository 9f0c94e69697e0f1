"""The dynamo exporter's static-shape exports of the ONNX architecture zoo
(see test_onnx_zoo.py; the dynamic-batch ones are in
test_onnx_zoo_dynamo_dynamic.py): files of their own, so that pytest-xdist's
--dist loadfile runs them beside the TorchScript half and each other."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from .test_onnx_zoo import folder, zoo_table  # noqa: E402, F401 - `folder` is a fixture


def test_zoo_dynamo_static_exports_import_and_match_onnxruntime(folder):  # noqa: F811
    zoo_table("dynamo", folder, dynamic=False)
