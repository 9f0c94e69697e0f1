"""RmsNorm, RotaryEncoding, SwiGlu and the attention cache as modules:
configs reject bad settings, records round-trip through a file, parameters
are visited and counted, bad inputs are clear errors. (Their values against
PyTorch: tests/parity/test_llama_blocks.py and test_autoregressive_cache.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.config import ConfigError, config
from burnbook.module import Module
from burnbook.record import NamedMpkFileRecorder

from .helpers import B


class LlamaBlock(Module):
    """Pre-norm attention with RoPE and a SwiGlu feed-forward (Llama's layer)."""

    attn_norm: nn.RmsNorm
    attn: nn.MultiHeadAttention
    rotary: nn.RotaryEncoding
    ffn_norm: nn.RmsNorm
    swiglu: nn.SwiGlu
    down: nn.Linear

    def forward(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.dims()
        h = self.attn_norm.forward(x)
        causal = nn.generate_autoregressive_mask(batch, seq, backend=x._B)
        x = x + self.attn.forward(nn.MhaInput.self_attn(h).mask_attn(causal), self.rotary).context
        return x + self.down.forward(self.swiglu.forward(self.ffn_norm.forward(x)))


@config
class LlamaBlockConfig:
    d_model: int
    n_heads: int
    d_ff: int

    def init(self, device=None, backend=None) -> LlamaBlock:
        return LlamaBlock(
            attn_norm=nn.RmsNormConfig(self.d_model).init(device, backend),
            attn=nn.MultiHeadAttentionConfig(self.d_model, self.n_heads, dropout=0.0).init(device, backend),
            rotary=nn.RotaryEncodingConfig(32, self.d_model // self.n_heads).init(device, backend),
            ffn_norm=nn.RmsNormConfig(self.d_model).init(device, backend),
            swiglu=nn.SwiGluConfig(self.d_model, self.d_ff).init(device, backend),
            down=nn.LinearConfig(self.d_ff, self.d_model, bias=False).init(device, backend),
        )


def test_llama_block_record_round_trip_and_params(tmp_path: Path) -> None:
    cfg = LlamaBlockConfig(8, 2, 12)
    B.seed(3)
    model = cfg.init()
    model.attn_norm.gamma = model.attn_norm.gamma.with_value(
        Tensor[B, 1].from_data(np.linspace(0.5, 1.5, 8, dtype=np.float32)))
    path = model.save_file(tmp_path / "block", NamedMpkFileRecorder())
    B.seed(4)
    loaded = cfg.init().load_file(path, NamedMpkFileRecorder())
    names = [name for name, _ in model.named_params()]
    assert "attn_norm.gamma" in names and "swiglu.linear_inner.weight" in names
    assert not any(name.startswith("rotary") for name in names), "RoPE's table is a constant, not a parameter"
    for (name, a), (_, b) in zip(model.named_params(), loaded.named_params()):
        np.testing.assert_array_equal(a.val().to_numpy(), b.val().to_numpy(), err_msg=name)
        assert a.id == b.id
    # two RmsNorm gammas, four 8x8 attention Linears with bias, SwiGlu's two
    # 8x12 projections without bias, the 12x8 down projection.
    assert model.num_params() == 2 * 8 + 4 * (8 * 8 + 8) + 2 * 8 * 12 + 12 * 8
    x = Tensor[B, 3].from_data(np.random.default_rng(5).standard_normal((2, 5, 8)).astype(np.float32)).inner()
    np.testing.assert_array_equal(model.valid().forward(x).to_numpy(), loaded.valid().forward(x).to_numpy())
    record = model.into_record()
    norm = nn.RmsNormConfig(8).init_with(record.attn_norm, backend=B)
    np.testing.assert_array_equal(norm.gamma.val().to_numpy(), np.linspace(0.5, 1.5, 8, dtype=np.float32))
    swiglu = nn.SwiGluConfig(8, 12).init_with(record.swiglu, backend=B)
    np.testing.assert_array_equal(swiglu.linear_outer.weight.val().to_numpy(),
                                  model.swiglu.linear_outer.weight.val().to_numpy())


def test_configs_save_and_load(tmp_path: Path) -> None:
    configs = [nn.RmsNormConfig(8, epsilon=1e-6), nn.RotaryEncodingConfig(64, 16, theta=5e5),
               nn.SwiGluConfig(8, 12, bias=True), cfg_default := nn.SwiGluConfig(4, 6)]
    for i, cfg in enumerate(configs):
        assert type(cfg).load(cfg.save(tmp_path / f"c{i}.json")) == cfg
    assert cfg_default.bias is False and nn.RmsNormConfig(3).epsilon == 1e-5
    assert nn.RotaryEncodingConfig(4, 2).theta == 10000.0


def test_display_names_settings() -> None:
    assert "d_model: 8" in str(nn.RmsNormConfig(8).init(backend=B))
    assert "theta: 500000.0" in str(nn.RotaryEncodingConfig(4, 6, theta=5e5).init(backend=B))
    assert "bias: false" in str(nn.SwiGluConfig(3, 5).init(backend=B)).lower()


@pytest.mark.parametrize("make, field", [
    (lambda: nn.RmsNormConfig(0), "d_model"),
    (lambda: nn.RmsNormConfig(4, epsilon=0.0), "epsilon"),
    (lambda: nn.RotaryEncodingConfig(8, 5), "d_model"),
    (lambda: nn.RotaryEncodingConfig(8, 4, theta=0.0), "theta"),
    (lambda: nn.RotaryEncodingConfig(0, 4), "max_sequence_length"),
    (lambda: nn.SwiGluConfig(4, 0), "d_output"),
])
def test_configs_reject_bad_settings(make, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        make()


def test_bad_inputs_are_clear_errors() -> None:
    x = Tensor[B, 3].from_data(np.zeros((1, 5, 6), np.float32))
    with pytest.raises(ValueError, match=r"RmsNorm: expects \[\.\.\., 4\]"):
        nn.RmsNormConfig(4).init(backend=B).forward(x)
    rope = nn.RotaryEncodingConfig(8, 6).init(backend=B)
    with pytest.raises(ValueError, match="exceed max_sequence_length 8"):
        rope.apply(x, 4)
    with pytest.raises(ValueError, match=r"expects \[\.\.\., seq, 4\]"):
        nn.RotaryEncodingConfig(8, 4).init(backend=B).forward(x)
    with pytest.raises(ValueError, match="d_input=4"):
        nn.SwiGluConfig(4, 3).init(backend=B).forward(x)


def test_tensor_cache_keeps_only_new_positions() -> None:
    """`func` sees the positions past those held, never the old ones again."""
    cache, seen = nn.TensorCache.empty(), []

    def func(t: Tensor) -> Tensor:
        seen.append(t.dims()[1])
        return t.mul_scalar(2.0)

    x = Tensor[B, 3].from_data(np.arange(12, dtype=np.float32).reshape(1, 4, 3))
    cache.forward_autoregressive(x[:, 0:2], 1, func)
    out = cache.forward_autoregressive(x[:, 0:3], 1, func)
    out = cache.forward_autoregressive(x, 1, func)
    assert seen == [2, 1, 1]
    np.testing.assert_array_equal(out.to_numpy(), 2.0 * x.to_numpy())
    with pytest.raises(ValueError, match="holds 4 positions"):
        cache.forward_autoregressive(x, 1, func)
