"""The dynamo exporter's half of the ONNX architecture zoo (see
test_onnx_zoo.py): its own file so that pytest-xdist's --dist loadfile runs
it beside the TorchScript half."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from .test_onnx_zoo import folder, zoo_table  # noqa: E402, F401 - `folder` is a fixture


def test_zoo_dynamo_exports_import_and_match_onnxruntime(folder):  # noqa: F811
    zoo_table("dynamo", folder)
