"""`@config` and `Config`: construction, checks, builders, JSON and errors."""

from __future__ import annotations

import enum
import inspect
import json
from pathlib import Path
from typing import ClassVar, Literal, Optional, Union

import numpy as np
import pytest

from burnbook.config import Config, ConfigError, config, is_config


@config
class OptimConfig:
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: Optional[float] = None


class Activation(enum.Enum):
    RELU = "relu"
    GELU = "gelu"


@config
class ModelConfig:
    num_classes: int
    hidden_size: int
    dropout: float = 0.5
    layers: list[int] = [64, 64]
    optim: OptimConfig = OptimConfig()
    activation: Activation = Activation.RELU
    norm: Literal["batch", "layer"] = "layer"
    names: dict[str, int] = {}
    tag: Optional[str] = None

    VERSION: ClassVar[int] = 1
    _cache: dict

    def init(self, device: str) -> tuple:
        return ("model", self.hidden_size, device)


# ---------------------------------------------------------------------------
# construction


def test_required_fields_first_positional_or_keyword() -> None:
    cfg = ModelConfig(10, 512)
    assert (cfg.num_classes, cfg.hidden_size, cfg.dropout) == (10, 512, 0.5)
    assert ModelConfig(hidden_size=512, num_classes=10) == cfg
    assert ModelConfig(10, 512, 0.1).dropout == 0.1
    params = list(inspect.signature(ModelConfig).parameters)
    assert params[:3] == ["num_classes", "hidden_size", "dropout"]


def test_missing_and_extra_arguments() -> None:
    with pytest.raises(TypeError, match="ModelConfig.*missing a required argument: 'hidden_size'"):
        ModelConfig(10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'width'"):
        ModelConfig(10, 5, width=3)


def test_fields_and_defaults_are_kept_apart() -> None:
    a, b = ModelConfig(1, 2), ModelConfig(1, 2)
    a.layers.append(3)
    assert b.layers == [64, 64]  # defaults are copied per instance
    assert ModelConfig.VERSION == 1 and "VERSION" not in ModelConfig(1, 2).to_dict()
    assert "_cache" not in ModelConfig(1, 2).to_dict()


def test_methods_in_the_class_body_keep_working() -> None:
    assert ModelConfig(10, 32).init("cpu") == ("model", 32, "cpu")


@pytest.mark.parametrize("kwargs, message", [
    ({"num_classes": "10"}, "field 'num_classes': expected int, got str '10'"),
    ({"num_classes": True}, "expected int, got bool"),
    ({"num_classes": 10.0}, "expected int, got float"),
    ({"dropout": "0.1"}, "field 'dropout': expected float"),
    ({"layers": [1, "x"]}, r"field 'layers\[1\]': expected int"),
    ({"layers": 3}, "expected list"),
    ({"optim": {"lr": 1}}, "field 'optim': expected OptimConfig"),
    ({"activation": "relu"}, "expected Activation"),
    ({"norm": "group"}, "expected Literal"),
    ({"names": {"a": "b"}}, r"field 'names.a': expected int"),
    ({"tag": 3}, "expected Optional"),
])
def test_wrong_types_are_type_errors(kwargs, message) -> None:
    args = {"num_classes": 10, "hidden_size": 5, **kwargs}
    with pytest.raises(TypeError, match=message):
        ModelConfig(**args)


def test_conversions() -> None:
    cfg = ModelConfig(np.int64(10), 5, dropout=1, layers=(1, 2))
    assert type(cfg.num_classes) is int and cfg.dropout == 1.0 and type(cfg.dropout) is float
    assert cfg.layers == [1, 2]
    assert OptimConfig(betas=[0.5, 1]).betas == (0.5, 1.0)
    with pytest.raises(TypeError, match=r"2 items\), got 3"):
        OptimConfig(betas=(1.0, 2.0, 3.0))


def test_assignment_is_checked_and_typos_caught() -> None:
    cfg = ModelConfig(10, 5)
    cfg.dropout = 0  # fields are mutable, as Burn's pub fields
    assert cfg.dropout == 0.0
    with pytest.raises(TypeError, match="expected int"):
        cfg.hidden_size = "big"
    with pytest.raises(AttributeError, match="no field 'drop_out'.*dropout"):
        cfg.drop_out = 0.2
    cfg._scratch = 1  # private attributes are free


# ---------------------------------------------------------------------------
# builders, equality, repr


def test_with_methods_return_a_new_config() -> None:
    cfg = ModelConfig(10, 512)
    new = cfg.with_dropout(0.2).with_optim(OptimConfig(lr=0.1))
    assert new.dropout == 0.2 and new.optim.lr == 0.1
    assert cfg.dropout == 0.5 and cfg.optim.lr == 1e-3
    assert new.hidden_size == 512
    with pytest.raises(TypeError, match="expected float"):
        cfg.with_dropout("high")


def test_equality_and_hash() -> None:
    assert ModelConfig(10, 5) == ModelConfig(10, 5)
    assert ModelConfig(10, 5) != ModelConfig(10, 6)
    assert ModelConfig(10, 5) != "ModelConfig"
    with pytest.raises(TypeError):
        hash(ModelConfig(10, 5))


def test_repr_and_str() -> None:
    cfg = OptimConfig(lr=0.1)
    assert repr(cfg) == "OptimConfig(lr=0.1, betas=(0.9, 0.999), weight_decay=None)"
    assert json.loads(str(cfg)) == {"lr": 0.1, "betas": [0.9, 0.999], "weight_decay": None}
    assert "optim=OptimConfig(lr=0.001" in repr(ModelConfig(1, 2))


def test_user_definitions_win() -> None:
    @config
    class Custom:
        x: int = 1

        def with_x(self, value):
            return "mine"

        def __repr__(self) -> str:
            return "Custom!"

    assert Custom().with_x(3) == "mine" and repr(Custom()) == "Custom!"


def test_defining_init_is_refused() -> None:
    with pytest.raises(TypeError, match="__post_init__"):
        @config
        class Bad:
            x: int

            def __init__(self, x):
                self.x = x


# ---------------------------------------------------------------------------
# dicts, JSON, files


def test_to_dict_and_back() -> None:
    cfg = ModelConfig(10, 5, activation=Activation.GELU, names={"a": 1}, tag="t")
    data = cfg.to_dict()
    assert data["optim"] == {"lr": 1e-3, "betas": [0.9, 0.999], "weight_decay": None}
    assert data["activation"] == "GELU"
    assert json.loads(json.dumps(data)) == data
    assert ModelConfig.from_dict(data) == cfg
    assert ModelConfig.from_json(cfg.to_json()) == cfg


def test_save_and_load(tmp_path: Path) -> None:
    cfg = ModelConfig(10, 512).with_dropout(0.1)
    path = cfg.save(tmp_path / "config.json")
    assert path == tmp_path / "config.json"  # no extension added
    assert ModelConfig.load(path) == cfg
    assert ModelConfig.load(str(path)) == cfg
    assert json.loads(path.read_text())["hidden_size"] == 512


def test_missing_keys_with_defaults_are_filled() -> None:
    assert ModelConfig.from_dict({"num_classes": 3, "hidden_size": 4}) == ModelConfig(3, 4)
    assert ModelConfig.from_dict({"num_classes": 3, "hidden_size": 4, "optim": {}}) == ModelConfig(3, 4)


@pytest.mark.parametrize("data, message", [
    ({"num_classes": 3}, "missing required key.*'hidden_size'"),
    ({"num_classes": 3, "hidden_size": 4, "depth": 2, "width": 1}, "unknown key.*'depth', 'width'.*has fields"),
    ({"num_classes": "3", "hidden_size": 4}, "field 'num_classes': expected int, got str '3'"),
    ({"num_classes": 3, "hidden_size": 4, "optim": {"lr": "fast"}}, "field 'optim.lr': expected float"),
    ({"num_classes": 3, "hidden_size": 4, "optim": {"lrate": 1}}, "unknown key.*'lrate' in 'optim'"),
    ({"num_classes": 3, "hidden_size": 4, "optim": {"betas": [1]}}, r"field 'optim.betas'.*2 items"),
    ({"num_classes": 3, "hidden_size": 4, "activation": "SWISH"}, "field 'activation': expected Activation"),
])
def test_from_dict_errors(data, message) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelConfig.from_dict(data)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="config file not found: .*nope.json"):
        ModelConfig.load(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"num_classes": 3,\n "hidden_size": }')
    with pytest.raises(ConfigError, match=r"bad\.json: invalid JSON at line 2, column 17"):
        ModelConfig.load(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="bad.json: expected a JSON object.*found a JSON list"):
        ModelConfig.load(bad)
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="bad.json: not UTF-8"):
        ModelConfig.load(bad)
    bad.write_text('{"num_classes": 3, "hidden_size": 4, "extra": 1}')
    with pytest.raises(ConfigError, match=r"bad\.json: ModelConfig: unknown key\(s\) 'extra'"):
        ModelConfig.load(bad)


def test_save_is_atomic(tmp_path: Path, monkeypatch) -> None:
    path = ModelConfig(1, 2).save(tmp_path / "c.json")
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr("burnbook._atomic.os.fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        ModelConfig(3, 4).save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_unsaveable_values_are_named() -> None:
    @config
    class Holder:
        thing: object = None

    with pytest.raises(TypeError, match="field 'thing': a set value cannot be saved as JSON"):
        Holder(thing={1}).to_json()


# ---------------------------------------------------------------------------
# nested variants, inheritance, base class, hooks, string annotations


@config
class Initializer:
    pass


@config
class KaimingUniform(Initializer):
    gain: float = 1.0
    fan_out_only: bool = False


@config
class Constant(Initializer):
    value: float


@config
class LinearConfig:
    d_input: int
    d_output: int
    initializer: Initializer = KaimingUniform()
    alt: Union[KaimingUniform, Constant, None] = None


def test_variants_are_tagged_by_class_name() -> None:
    cfg = LinearConfig(2, 3, alt=Constant(0.5))
    data = cfg.to_dict()
    assert data["initializer"] == {"KaimingUniform": {"gain": 1.0, "fan_out_only": False}}
    assert data["alt"] == {"Constant": {"value": 0.5}}
    back = LinearConfig.from_dict(data)
    assert back == cfg and type(back.initializer) is KaimingUniform and type(back.alt) is Constant
    assert LinearConfig.from_dict({"d_input": 1, "d_output": 1, "initializer": {"Constant": {"value": 2}}}
                                  ).initializer == Constant(2.0)


def test_inherited_fields_come_first() -> None:
    assert list(KaimingUniform().to_dict()) == ["gain", "fan_out_only"]

    @config
    class Base:
        a: int
        b: int = 2

    @config
    class Child(Base):
        c: int

    assert list(inspect.signature(Child).parameters) == ["a", "c", "b"]
    assert Child(1, 3).to_dict() == {"a": 1, "b": 2, "c": 3}


def test_config_base_class() -> None:
    class AdamConfig(Config):
        beta_1: float = 0.9
        epsilon: float = 1e-5

        def init(self) -> str:
            return f"adam({self.beta_1})"

    cfg = AdamConfig().with_beta_1(0.8)
    assert cfg.init() == "adam(0.8)" and AdamConfig.from_json(cfg.to_json()) == cfg
    assert isinstance(cfg, Config) and isinstance(ModelConfig(1, 2), Config)
    assert not isinstance(cfg, ModelConfig) and not isinstance(3, Config)
    assert is_config(AdamConfig) and is_config(cfg) and not is_config(int)


def test_post_init_validates_everywhere(tmp_path: Path) -> None:
    @config
    class DropoutConfig:
        prob: float = 0.5

        def __post_init__(self) -> None:
            if not 0.0 <= self.prob <= 1.0:
                raise ValueError(f"dropout probability must be in [0, 1], got {self.prob}")

    with pytest.raises(ValueError, match="must be in"):
        DropoutConfig(1.5)
    with pytest.raises(ValueError, match="must be in"):
        DropoutConfig().with_prob(-1)
    with pytest.raises(ConfigError, match="DropoutConfig rejected the values: dropout probability"):
        DropoutConfig.from_dict({"prob": 2})


def test_string_annotations_and_local_classes() -> None:
    @config
    class Inner:
        size: "int" = 3

    @config
    class Outer:
        inner: "Inner"
        items: "list[Inner]" = []

    cfg = Outer(Inner(4), [Inner()])
    assert Outer.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(TypeError, match="expected int"):
        Inner("x")


def test_unresolvable_annotation_is_a_clear_error() -> None:
    @config
    class Broken:
        x: "NoSuchType" = 1  # noqa: F821

    with pytest.raises(TypeError, match="cannot resolve its field annotations.*NoSuchType"):
        Broken()
