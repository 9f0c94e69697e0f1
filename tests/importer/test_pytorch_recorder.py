"""`PyTorchFileRecorder`: PyTorch models saved with torch.save and loaded
into their burnbook twins give the same outputs; renames, partial loads,
precisions and every error a learner can make."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from burnbook import Tensor, nn  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.pytorch import LoadArgs, PyTorchFileRecorder, PyTorchRecord  # noqa: E402
from burnbook.module import Module  # noqa: E402
from burnbook.record import (  # noqa: E402
    DoublePrecisionSettings, FullPrecisionSettings, HalfPrecisionSettings, NamedMpkFileRecorder, Record,
    RecordError,
)

B = NdArray
DEVICE = B.default_device()


def run(model: Module, x: np.ndarray) -> np.ndarray:
    return model(Tensor[B, x.ndim].from_data(x, DEVICE)).to_numpy()


def torch_run(model: "torch.nn.Module", x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def inputs(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- the book's example ----------------------------------------------------------------------


class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(2, 2, (2, 2))
        self.conv2 = torch.nn.Conv2d(2, 2, (2, 2), bias=False)

    def forward(self, x):
        return self.conv2(self.conv1(x))


class Net(Module):
    conv1: nn.Conv2d
    conv2: nn.Conv2d

    @classmethod
    def new(cls) -> "Net":
        return cls(conv1=nn.Conv2dConfig([2, 2], [2, 2]).init(DEVICE, B),
                   conv2=nn.Conv2dConfig([2, 2], [2, 2], bias=False).init(DEVICE, B))

    def forward(self, x):
        return self.conv2(self.conv1(x))


@pytest.fixture
def conv2d_pt(tmp_path):
    torch.manual_seed(42)
    model = TorchNet()
    torch.save(model.state_dict(), tmp_path / "conv2d.pt")
    return tmp_path / "conv2d.pt", model


def test_the_books_conv_net_matches_pytorch(conv2d_pt) -> None:
    path, reference = conv2d_pt
    model = Net.new()
    record = PyTorchFileRecorder(FullPrecisionSettings).load(LoadArgs(path), DEVICE, model)
    loaded = model.load_record(record)
    x = inputs(2, 2, 5, 5)
    np.testing.assert_allclose(run(loaded, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)
    # Parameter ids are kept, so optimizer state keyed by id still follows them.
    assert [p.id for p in loaded.params()] == [p.id for p in model.params()]


def test_option_b_pre_converted_to_burnbooks_format(conv2d_pt, tmp_path) -> None:
    path, reference = conv2d_pt
    model = Net.new()
    record = PyTorchFileRecorder(FullPrecisionSettings).load(path, DEVICE, model)
    NamedMpkFileRecorder(FullPrecisionSettings).record(record, tmp_path / "net")
    again = Net.new().load_record(NamedMpkFileRecorder(FullPrecisionSettings).load(tmp_path / "net"))
    x = inputs(1, 2, 4, 4)
    np.testing.assert_allclose(run(again, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)


def test_the_record_without_a_module_is_the_file(conv2d_pt) -> None:
    path, reference = conv2d_pt
    record = PyTorchFileRecorder().load(path)
    assert isinstance(record, PyTorchRecord)
    assert record.shapes() == {"conv1.weight": [2, 2, 2, 2], "conv1.bias": [2], "conv2.weight": [2, 2, 2, 2]}
    np.testing.assert_array_equal(record["conv1.bias"].to_numpy(), reference.conv1.bias.detach().numpy())
    model = Net.new()
    x = inputs(1, 2, 3, 3)
    loaded = model.load_record(record.adapt_to(model))
    np.testing.assert_allclose(run(loaded, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)


def test_load_record_adapts_the_raw_record(tmp_path) -> None:
    # Burn's shape, `model.load_record(recorder.load(args, device))`: a square
    # Linear fits either layout, so load_record must adapt the raw record
    # (transpose the weight) rather than load it untransposed.
    torch.manual_seed(0)
    reference = torch.nn.Linear(3, 3)
    torch.save({"fc." + k: v for k, v in reference.state_dict().items()}, tmp_path / "sq.pt")

    class Square(Module):
        fc: nn.Linear

        def forward(self, x):
            return self.fc(x)

    model = Square(fc=nn.LinearConfig(3, 3).init(DEVICE, B))
    raw = PyTorchFileRecorder().load(tmp_path / "sq.pt", DEVICE)
    loaded = model.load_record(raw)
    x = inputs(2, 3)
    np.testing.assert_allclose(run(loaded, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)


# -- layers whose layouts differ ------------------------------------------------------------


class Mixed(Module):
    fc: nn.Linear
    norm: nn.BatchNorm
    layer_norm: nn.LayerNorm
    group_norm: nn.GroupNorm
    prelu: nn.PRelu
    embedding: nn.Embedding
    up: nn.ConvTranspose2d
    blocks: list

    def forward(self, tokens):
        e = self.embedding(tokens)                              # [batch, seq, 4]
        h = self.prelu(self.norm(self.fc(e.reshape([-1, 4])).reshape([-1, 6, 1, 1])))
        h = self.group_norm(self.up(h))                         # [batch*seq, 2, 2, 2]
        h = self.layer_norm(h.reshape([-1, 8]))
        for block in self.blocks:
            h = block(h)
        return h


class TorchMixed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 6)
        self.norm = torch.nn.BatchNorm2d(6)
        self.layer_norm = torch.nn.LayerNorm(8)
        self.group_norm = torch.nn.GroupNorm(1, 2)
        self.prelu = torch.nn.PReLU(6)
        self.embedding = torch.nn.Embedding(5, 4)
        self.up = torch.nn.ConvTranspose2d(6, 2, 2)
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)])

    def forward(self, tokens):
        e = self.embedding(tokens)
        h = self.prelu(self.norm(self.fc(e.reshape(-1, 4)).reshape(-1, 6, 1, 1)))
        h = self.group_norm(self.up(h))
        h = self.layer_norm(h.reshape(-1, 8))
        for block in self.blocks:
            h = block(h)
        return h


def mixed_model() -> Mixed:
    return Mixed(
        fc=nn.LinearConfig(4, 6).init(DEVICE, B), norm=nn.BatchNormConfig(6).init(DEVICE, B),
        layer_norm=nn.LayerNormConfig(8).init(DEVICE, B), group_norm=nn.GroupNormConfig(1, 2).init(DEVICE, B),
        prelu=nn.PReluConfig(6).init(DEVICE, B), embedding=nn.EmbeddingConfig(5, 4).init(DEVICE, B),
        up=nn.ConvTranspose2dConfig([6, 2], [2, 2]).init(DEVICE, B),
        blocks=[nn.LinearConfig(8, 8).init(DEVICE, B) for _ in range(2)])


def trained_mixed(path) -> "torch.nn.Module":
    """Random, non-default values everywhere, running statistics included."""
    torch.manual_seed(3)
    model = TorchMixed()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    model.train()
    for _ in range(3):
        model(torch.randint(0, 5, (4, 3)))
    model.eval()
    torch.save(model.state_dict(), path)
    return model


def test_linear_norms_prelu_embedding_transposed_conv_and_lists(tmp_path) -> None:
    reference = trained_mixed(tmp_path / "mixed.pt")
    model = mixed_model()
    loaded = model.load_record(PyTorchFileRecorder().load(tmp_path / "mixed.pt", DEVICE, model))
    tokens = np.array([[0, 3, 4], [2, 1, 1]])
    got = loaded(Tensor[B, 2].from_ints(tokens.tolist(), DEVICE)).to_numpy()
    with torch.no_grad():
        want = reference(torch.from_numpy(tokens)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # The layouts themselves, independent of the forward passes.
    np.testing.assert_array_equal(loaded.fc.weight.val().to_numpy(), reference.fc.weight.detach().numpy().T)
    np.testing.assert_array_equal(loaded.norm.gamma.val().to_numpy(), reference.norm.weight.detach().numpy())
    np.testing.assert_array_equal(loaded.norm.running_var.val().to_numpy(), reference.norm.running_var.numpy())
    np.testing.assert_array_equal(loaded.embedding.weight.val().to_numpy(), reference.embedding.weight.detach().numpy())


# -- key remap -----------------------------------------------------------------------------------


class TorchWrapped(torch.nn.Module):
    """The book's remap example: the convolutions one level down, under `conv`."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = TorchNet()

    def forward(self, x):
        return self.conv(x)


@pytest.mark.parametrize("replacement", ["$1", "${1}", r"\1", r"\g<1>"])
def test_the_books_key_remap_in_burn_and_python_syntax(tmp_path, replacement: str) -> None:
    torch.manual_seed(1)
    reference = TorchWrapped()
    torch.save(reference.state_dict(), tmp_path / "key_remap.pt")
    args = LoadArgs.new(tmp_path / "key_remap.pt").with_key_remap("conv\\.(.*)", replacement)
    model = Net.new()
    loaded = model.load_record(PyTorchFileRecorder().load(args, DEVICE, model))
    x = inputs(1, 2, 4, 4)
    np.testing.assert_allclose(run(loaded, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)


class Mlp(Module):
    fc1: nn.Linear
    norm: nn.BatchNorm
    fc2: nn.Linear

    def forward(self, x):
        return self.fc2(nn.Relu()(self.norm(self.fc1(x))))


def test_sequential_indices_renamed_to_fields(tmp_path) -> None:
    torch.manual_seed(2)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU(),
                                    torch.nn.Linear(5, 2))
    reference.train()
    reference(torch.randn(16, 3))
    reference.eval()
    torch.save(reference.state_dict(), tmp_path / "seq.pt")
    args = (LoadArgs(tmp_path / "seq.pt").with_key_remap(r"^0\.", "fc1.").with_key_remap(r"^1\.", "norm.")
            .with_key_remap(r"^3\.", "fc2."))
    model = Mlp(fc1=nn.LinearConfig(3, 5).init(DEVICE, B), norm=nn.BatchNormConfig(5).init(DEVICE, B),
                fc2=nn.LinearConfig(5, 2).init(DEVICE, B))
    loaded = model.load_record(PyTorchFileRecorder().load(args, DEVICE, model))
    x = inputs(4, 3)
    np.testing.assert_allclose(run(loaded, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)


def test_remap_rules_are_checked(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"pattern 'conv\(' is not a valid regular expression"):
        LoadArgs("x.pt").with_key_remap("conv(", "x")
    with pytest.raises(ValueError, match=r"refers to group '2'"):
        LoadArgs("x.pt").with_key_remap("conv\\.(.*)", "$2")
    torch.save({"a.weight": torch.ones(1), "b.weight": torch.ones(1)}, tmp_path / "two.pt")
    with pytest.raises(RecordError, match=r"two\.pt: key remap gives two tensors the name 'x.weight': "
                                          r"'a.weight' and 'b.weight'"):
        PyTorchFileRecorder().load(LoadArgs(tmp_path / "two.pt").with_key_remap(r"^[ab]\.", "x."))


# -- partial models ------------------------------------------------------------------------------


class TorchAutoencoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = torch.nn.ModuleDict({"fc": torch.nn.Linear(6, 3)})
        self.decoder = torch.nn.ModuleDict({"fc": torch.nn.Linear(3, 6)})


class Encoder(Module):
    fc: nn.Linear

    def forward(self, x):
        return self.fc(x)


class EncoderOnly(Module):
    encoder: Encoder

    def forward(self, x):
        return self.encoder(x)


def test_an_encoder_alone_loads_from_the_whole_networks_file(tmp_path, capsys) -> None:
    torch.manual_seed(4)
    reference = TorchAutoencoder()
    torch.save(reference.state_dict(), tmp_path / "autoencoder.pt")
    model = EncoderOnly(encoder=Encoder(fc=nn.LinearConfig(6, 3).init(DEVICE, B)))
    args = LoadArgs(tmp_path / "autoencoder.pt").with_debug_print()
    loaded = model.load_record(PyTorchFileRecorder().load(args, DEVICE, model))
    x = inputs(2, 6)
    np.testing.assert_allclose(run(loaded, x), torch_run(reference.encoder["fc"], x), rtol=1e-5, atol=1e-6)
    printed = capsys.readouterr().out
    assert "4 tensor(s)" in printed and "decoder.fc.weight" in printed
    assert "Skipped 2 key(s)" in printed and "EncoderOnly does not define: decoder.fc.weight, decoder.fc.bias" in printed


# -- errors ------------------------------------------------------------------------------------------


def test_missing_keys_name_the_file_and_the_unused_keys(tmp_path) -> None:
    torch.manual_seed(1)
    torch.save(TorchWrapped().state_dict(), tmp_path / "key_remap.pt")
    with pytest.raises(RecordError) as err:
        PyTorchFileRecorder().load(tmp_path / "key_remap.pt", DEVICE, Net.new())
    message = str(err.value)
    assert "key_remap.pt into Net" in message
    assert "missing from the file: conv1.weight, conv1.bias, conv2.weight" in message
    assert "file keys that no parameter used: conv.conv1.weight, conv.conv1.bias, conv.conv2.weight" in message
    assert "with_key_remap" in message


def test_unexpected_keys_inside_a_layer_the_module_has(tmp_path) -> None:
    torch.manual_seed(0)
    torch.save(TorchNet().state_dict() | {"conv2.bias": torch.zeros(2)}, tmp_path / "extra.pt")
    with pytest.raises(RecordError, match=r"in the file but not in the module: conv2\.bias \(the module's "
                                          r"Conv2d at 'conv2' has no parameter 'bias'\)"):
        PyTorchFileRecorder().load(tmp_path / "extra.pt", DEVICE, Net.new())


def test_shape_mismatches_show_both_layouts(tmp_path) -> None:
    torch.save({"fc1.weight": torch.ones(4, 3), "fc1.bias": torch.ones(5), "norm.weight": torch.ones(5),
                "norm.bias": torch.ones(5), "norm.running_mean": torch.ones(5), "norm.running_var": torch.ones(5),
                "fc2.weight": torch.ones(2, 5), "fc2.bias": torch.ones(2)}, tmp_path / "shapes.pt")
    model = Mlp(fc1=nn.LinearConfig(3, 5).init(DEVICE, B), norm=nn.BatchNormConfig(5).init(DEVICE, B),
                fc2=nn.LinearConfig(5, 2).init(DEVICE, B))
    with pytest.raises(RecordError, match=r"fc1\.weight: the file has f32 \[4, 3\] \(PyTorch's \[out, in\]; "
                                          r"\[3, 4\] once transposed to burnbook's \[in, out\]\), the module \[3, 5\]"):
        PyTorchFileRecorder().load(tmp_path / "shapes.pt", DEVICE, model)


def test_integer_tensors_convert_to_float_parameters(tmp_path) -> None:
    torch.save({"fc.weight": torch.ones(2, 2, dtype=torch.int64), "fc.bias": torch.ones(2)}, tmp_path / "ints.pt")
    model = Encoder(fc=nn.LinearConfig(2, 2).init(DEVICE, B))
    # Integers convert to float parameters (as torch's .float() would).
    loaded = model.load_record(PyTorchFileRecorder().load(tmp_path / "ints.pt", DEVICE, model))
    np.testing.assert_array_equal(loaded.fc.weight.val().to_numpy(), np.ones((2, 2), np.float32))


# -- precision and element types -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_file_element_types_convert_to_the_models(tmp_path, dtype) -> None:
    torch.manual_seed(5)
    reference = torch.nn.Linear(4, 3).to(dtype)
    torch.save({"fc." + k: v for k, v in reference.state_dict().items()}, tmp_path / "typed.pt")
    model = Encoder(fc=nn.LinearConfig(4, 3).init(DEVICE, B))
    loaded = model.load_record(PyTorchFileRecorder(FullPrecisionSettings).load(tmp_path / "typed.pt", DEVICE, model))
    weight = loaded.fc.weight.val()
    assert str(weight.dtype) == "f32"
    np.testing.assert_array_equal(weight.to_numpy(), reference.weight.detach().float().numpy().T)


def test_precision_settings_set_the_records_float_type(conv2d_pt) -> None:
    path, reference = conv2d_pt
    model = Net.new()
    want = reference.conv1.weight.detach().numpy()
    for settings, dtype in [(FullPrecisionSettings, np.float32), (HalfPrecisionSettings, np.float16),
                            (DoublePrecisionSettings, np.float64)]:
        record = PyTorchFileRecorder[settings]().load(path, DEVICE, model)
        assert isinstance(record, Record)
        array = record.conv1.weight.data.to_numpy()
        assert array.dtype == dtype
        np.testing.assert_array_equal(array, want.astype(dtype))
    assert PyTorchFileRecorder(HalfPrecisionSettings()) == PyTorchFileRecorder[HalfPrecisionSettings]()
    assert repr(PyTorchFileRecorder()) == "PyTorchFileRecorder[FullPrecisionSettings]()"


def test_top_level_key_of_a_training_checkpoint(tmp_path) -> None:
    torch.manual_seed(6)
    reference = TorchNet()
    torch.save({"epoch": 7, "model": reference.state_dict(), "optimizer": {"lr": 0.1}}, tmp_path / "ckpt.pt")
    model = Net.new()
    args = LoadArgs(tmp_path / "ckpt.pt").with_top_level_key("model")
    loaded = model.load_record(PyTorchFileRecorder().load(args, DEVICE, model))
    x = inputs(1, 2, 3, 3)
    np.testing.assert_allclose(run(loaded, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)


def test_safetensors_load_through_the_recorder(tmp_path) -> None:
    safetensors_torch = pytest.importorskip("safetensors.torch")
    torch.manual_seed(7)
    reference = TorchWrapped()
    safetensors_torch.save_file(reference.state_dict(), tmp_path / "net.safetensors")
    args = LoadArgs(tmp_path / "net.safetensors").with_key_remap(r"^conv\.", "")
    model = Net.new()
    loaded = model.load_record(PyTorchFileRecorder().load(args, DEVICE, model))
    x = inputs(1, 2, 4, 4)
    np.testing.assert_allclose(run(loaded, x), torch_run(reference, x), rtol=1e-5, atol=1e-6)
