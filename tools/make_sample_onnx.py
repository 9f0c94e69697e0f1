"""Write notebooks/assets/mnist_mlp.onnx, the model the "Import ONNX Model"
chapter imports when PyTorch is not installed.

It is built with `onnx.helper` alone (no PyTorch needed) and is the same
model the chapter exports from PyTorch when it can: an MLP for 28x28 digits,
`Flatten -> Gemm(784, 64) -> Relu -> Gemm(64, 10)`, with node names, opset
(17) and weights equal to the PyTorch export's, so both paths of the chapter
print the same numbers. The weights are fixed draws from NumPy (untrained;
the chapter fine-tunes them). Run from the repository root:

    .venv/bin/python tools/make_sample_onnx.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ASSET = Path(__file__).resolve().parents[1] / "notebooks" / "assets" / "mnist_mlp.onnx"
OPSET = 17
IR_VERSION = 8  # what torch.onnx.export writes for opset 17, and onnxruntime reads


def mlp_weights(seed: int = 2024) -> dict[str, np.ndarray]:
    """The MLP's weights in PyTorch's layout (`[out, in]`), drawn like
    PyTorch's default init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)). The chapter
    draws them with the same code."""
    rng = np.random.default_rng(seed)
    shapes = {"fc1": (64, 784), "fc2": (10, 64)}
    weights = {}
    for name, (d_out, d_in) in shapes.items():
        bound = 1.0 / np.sqrt(d_in)
        weights[f"{name}.weight"] = rng.uniform(-bound, bound, (d_out, d_in)).astype(np.float32)
        weights[f"{name}.bias"] = rng.uniform(-bound, bound, d_out).astype(np.float32)
    return weights


def build_model(weights: dict[str, np.ndarray]):
    """The ONNX model, laid out as torch.onnx.export lays out the same MLP."""
    from onnx import TensorProto, helper, numpy_helper

    images = helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 1, 28, 28])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node("Flatten", ["images"], ["/Flatten_output_0"], name="/Flatten", axis=1),
        helper.make_node("Gemm", ["/Flatten_output_0", "fc1.weight", "fc1.bias"], ["/fc1/Gemm_output_0"],
                         name="/fc1/Gemm", alpha=1.0, beta=1.0, transB=1),
        helper.make_node("Relu", ["/fc1/Gemm_output_0"], ["/Relu_output_0"], name="/Relu"),
        helper.make_node("Gemm", ["/Relu_output_0", "fc2.weight", "fc2.bias"], ["logits"],
                         name="/fc2/Gemm", alpha=1.0, beta=1.0, transB=1),
    ]
    inits = [numpy_helper.from_array(array, name) for name, array in weights.items()]
    graph = helper.make_graph(nodes, "main_graph", [images], [logits], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="burnbook")
    model.ir_version = IR_VERSION
    return model


def main() -> None:
    import onnx

    model = build_model(mlp_weights())
    onnx.checker.check_model(model)
    ASSET.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(ASSET))
    print(f"wrote {ASSET.relative_to(ASSET.parents[2])} ({ASSET.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
