"""Layer configs refuse sizes, counts, paddings and probabilities no layer can
be built from, naming the config class, the field and the value, on
construction, on loading and again at `init` (fields are assignable)."""

from __future__ import annotations

import re
from typing import Any, Callable

import pytest

from burnbook import nn
from burnbook.config import ConfigError

# (build the config, field shown in the message, value shown)
_BAD: list[tuple[str, Callable[[], Any], str, str]] = [
    ("LinearConfig", lambda: nn.LinearConfig(0, 3), "d_input", "0"),
    ("LinearConfig", lambda: nn.LinearConfig(-2, 3), "d_input", "-2"),
    ("LinearConfig", lambda: nn.LinearConfig(4, 0), "d_output", "0"),
    ("EmbeddingConfig", lambda: nn.EmbeddingConfig(0, 8), "n_embedding", "0"),
    ("EmbeddingConfig", lambda: nn.EmbeddingConfig(10, -1), "d_model", "-1"),
    ("Conv2dConfig", lambda: nn.Conv2dConfig([0, 8], [3, 3]), r"channels\[0\]", "0"),
    ("Conv2dConfig", lambda: nn.Conv2dConfig([1, 8], [3, 0]), r"kernel_size\[1\]", "0"),
    ("Conv2dConfig", lambda: nn.Conv2dConfig([1, 8], [3, 3], stride=[0, 1]), r"stride\[0\]", "0"),
    ("Conv2dConfig", lambda: nn.Conv2dConfig([1, 8], [3, 3], dilation=[1, -1]), r"dilation\[1\]", "-1"),
    ("Conv2dConfig", lambda: nn.Conv2dConfig([1, 8], [3, 3], groups=0), "groups", "0"),
    ("Conv1dConfig", lambda: nn.Conv1dConfig(1, 4, 0), "kernel_size", "0"),
    ("Conv1dConfig", lambda: nn.Conv1dConfig(1, 4, 3, stride=-1), "stride", "-1"),
    ("ConvTranspose2dConfig", lambda: nn.ConvTranspose2dConfig([2, 2], [3, 3], padding=[0, -1]),
     r"padding\[1\]", "-1"),
    ("ConvTranspose1dConfig", lambda: nn.ConvTranspose1dConfig([2, 0], 3), r"channels\[1\]", "0"),
    ("ConvTranspose1dConfig", lambda: nn.ConvTranspose1dConfig([2, 2], 3, padding_out=-1), "padding_out", "-1"),
    ("MaxPool2dConfig", lambda: nn.MaxPool2dConfig([2, 0]), r"kernel_size\[1\]", "0"),
    ("MaxPool1dConfig", lambda: nn.MaxPool1dConfig(2, stride=0), "stride", "0"),
    ("AvgPool2dConfig", lambda: nn.AvgPool2dConfig([2, 2], strides=[-1, 1]), r"strides\[0\]", "-1"),
    ("AvgPool1dConfig", lambda: nn.AvgPool1dConfig(0), "kernel_size", "0"),
    ("AdaptiveAvgPool2dConfig", lambda: nn.AdaptiveAvgPool2dConfig([0, 1]), r"output_size\[0\]", "0"),
    ("AdaptiveAvgPool1dConfig", lambda: nn.AdaptiveAvgPool1dConfig(0), "output_size", "0"),
    ("PaddingConfig2d.Explicit", lambda: nn.PaddingConfig2d.Explicit(1, -2), "width", "-2"),
    ("PaddingConfig1d.Explicit", lambda: nn.PaddingConfig1d.Explicit(-1), "padding", "-1"),
    ("BatchNormConfig", lambda: nn.BatchNormConfig(0), "num_features", "0"),
    ("BatchNormConfig", lambda: nn.BatchNormConfig(3, momentum=1.5), "momentum", "1.5"),
    ("BatchNormConfig", lambda: nn.BatchNormConfig(3, epsilon=-1e-5), "epsilon", "-1e-05"),
    ("LayerNormConfig", lambda: nn.LayerNormConfig(0), "d_model", "0"),
    ("GroupNormConfig", lambda: nn.GroupNormConfig(0, 4), "num_groups", "0"),
    ("DropoutConfig", lambda: nn.DropoutConfig(-0.1), "prob", "-0.1"),
    ("DropoutConfig", lambda: nn.DropoutConfig(1.01), "prob", "1.01"),
    ("MultiHeadAttentionConfig", lambda: nn.MultiHeadAttentionConfig(8, 0), "n_heads", "0"),
    ("MultiHeadAttentionConfig", lambda: nn.MultiHeadAttentionConfig(8, 2, dropout=2.0), "dropout", "2.0"),
    ("PositionWiseFeedForwardConfig", lambda: nn.PositionWiseFeedForwardConfig(8, 0), "d_ff", "0"),
    ("TransformerEncoderConfig", lambda: nn.TransformerEncoderConfig(8, 16, 2, 0), "n_layers", "0"),
    ("TransformerDecoderConfig", lambda: nn.TransformerDecoderConfig(8, 16, -2, 1), "n_heads", "-2"),
    ("LstmConfig", lambda: nn.LstmConfig(0, 4), "d_input", "0"),
    ("GruConfig", lambda: nn.GruConfig(3, 0), "d_hidden", "0"),
    ("PositionalEncodingConfig", lambda: nn.PositionalEncodingConfig(0), "d_model", "0"),
    ("PReluConfig", lambda: nn.PReluConfig(num_parameters=0), "num_parameters", "0"),
]


@pytest.mark.parametrize("name, build, field, value", _BAD,
                         ids=[f"{n}-{re.sub(r'[^a-z_0-9]', '', f)}-{v}" for n, _, f, v in _BAD])
def test_bad_sizes_name_the_class_the_field_and_the_value(name, build, field, value) -> None:
    with pytest.raises(ConfigError, match=rf"^{re.escape(name)}: {field} must .*got {re.escape(value)}"):
        build()


@pytest.mark.parametrize("build", [
    lambda: nn.LinearConfig(1, 1), lambda: nn.EmbeddingConfig(1, 1), lambda: nn.Conv2dConfig([1, 1], [1, 1]),
    lambda: nn.ConvTranspose2dConfig([1, 1], [1, 1]), lambda: nn.MaxPool2dConfig([1, 1]),
    lambda: nn.AdaptiveAvgPool1dConfig(1), lambda: nn.DropoutConfig(0.0), lambda: nn.DropoutConfig(1.0),
    lambda: nn.BatchNormConfig(1, epsilon=0.0, momentum=1.0), lambda: nn.PaddingConfig2d.Explicit(0, 0),
    lambda: nn.TransformerEncoderConfig(2, 1, 1, 1, dropout=0.0), lambda: nn.LstmConfig(1, 1),
])
def test_the_smallest_valid_settings_build(build) -> None:
    cfg = build()
    if hasattr(cfg, "init"):
        cfg.init()


def test_the_issue_cases_are_config_errors_not_arithmetic_errors() -> None:
    # were ZeroDivisionError and "math domain error" from the initializer
    with pytest.raises(ConfigError, match="LinearConfig: d_input must be >= 1"):
        nn.LinearConfig(0, 3).init()
    with pytest.raises(ConfigError, match="LinearConfig: d_input must be >= 1.*got -2"):
        nn.LinearConfig(-2, 3).init()
    assert issubclass(ConfigError, ValueError)


def test_a_field_reassigned_after_construction_is_checked_at_init() -> None:
    cfg = nn.LinearConfig(4, 3)
    cfg.d_output = 0  # assignment checks the type only
    with pytest.raises(ConfigError, match="LinearConfig: d_output must be >= 1"):
        cfg.init()
    conv = nn.Conv2dConfig([4, 8], [3, 3])
    conv.groups = 3
    with pytest.raises(ConfigError, match=r"channels \[4, 8\] must both be divisible by groups=3"):
        conv.init()


def test_wrong_list_lengths_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"Conv2dConfig: channels must hold 2 values, got 3"):
        nn.Conv2dConfig([1, 8, 2], [3, 3])
    with pytest.raises(ConfigError, match=r"MaxPool2dConfig: kernel_size must hold 2 values, got 1"):
        nn.MaxPool2dConfig([2])


def test_loading_a_bad_size_names_the_file_and_the_field(tmp_path) -> None:
    path = tmp_path / "linear.json"
    path.write_text('{"d_input": 0, "d_output": 3}')
    with pytest.raises(ConfigError, match=r"linear\.json: LinearConfig.*d_input must be >= 1.*got 0"):
        nn.LinearConfig.load(path)
    with pytest.raises(ConfigError, match=r"Conv2dConfig: field 'padding'.*"
                                          r"PaddingConfig2d\.Explicit: height must be >= 0 .*got -1"):
        nn.Conv2dConfig.from_dict({"channels": [1, 2], "kernel_size": [3, 3],
                                   "padding": {"Explicit": {"height": -1, "width": 0}}})
