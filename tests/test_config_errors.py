"""Config input that once raised raw interpreter errors: each is now a
`ConfigError` naming the field (and the key, the depth limit) at fault."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Optional

import pytest

from burnbook.config import ConfigError, config


@config
class Node:
    name: str = "n"
    child: Optional["Node"] = None


@config
class Settings:
    lr: float = 0.1
    steps: int = 1
    labels: dict[int, str] = {}
    extra: Any = None
    decay: Optional[float] = None


def _chain(depth: int) -> dict:
    data: dict = {}
    inner = data
    for _ in range(depth - 1):
        inner["child"] = {}
        inner = inner["child"]
    return data


# ---------------------------------------------------------------------------
# nesting


def test_json_nested_5000_deep_names_the_limit_and_the_path() -> None:
    deep = "[" * 5000 + "]" * 5000
    text = '{"extra": {"a": [1, {"b": %s}]}}' % deep
    with pytest.raises(ConfigError, match=r"limit of 100 levels at 'extra\.a\[1\]\.b\[0\]\[0\]") as info:
        Settings.from_json(text)
    assert "line 1" in str(info.value)


def test_nested_configs_5000_deep_from_json_from_dict_and_load(tmp_path) -> None:
    data = _chain(5000)
    with pytest.raises(ConfigError, match=r"limit of 100 levels at 'child\.child\.child"):
        Node.from_json(_chain_text(5000))
    with pytest.raises(ConfigError, match=r"Node: field 'child\.child\.child.*limit of 100 levels"):
        Node.from_dict(data)
    path = tmp_path / "deep.json"
    path.write_text(_chain_text(5000))
    with pytest.raises(ConfigError, match=r"deep\.json: nested deeper than the limit of 100"):
        Node.load(path)


def _chain_text(depth: int) -> str:
    return '{"child": ' * (depth - 1) + "{}" + "}" * (depth - 1)


def test_nesting_within_the_limit_round_trips() -> None:
    node = Node.from_json(_chain_text(90))
    depth = 0
    while node is not None:
        node, depth = node.child, depth + 1
    assert depth == 90
    assert Node.from_json(Node.from_json(_chain_text(90)).to_json()) == Node.from_json(_chain_text(90))


def test_saving_a_config_nested_5000_deep_is_a_config_error() -> None:
    node = None
    for _ in range(5000):
        node = Node(child=node)
    with pytest.raises(ConfigError, match=r"Node: field 'child\.child.*too deep to save"):
        node.to_json()


# ---------------------------------------------------------------------------
# numbers


def test_a_5000_digit_number_names_the_field() -> None:
    big = "9" * 5000
    for field in ("steps", "lr"):
        with pytest.raises(ConfigError, match=rf"field '{field}': an integer of 5000 digits.*limit of 4300"):
            Settings.from_json('{"%s": %s}' % (field, big))
    with pytest.raises(ConfigError, match=r"field 'extra\[1\]': an integer of 5000 digits"):
        Settings.from_json('{"extra": [1, %s]}' % big)


def test_an_int_too_long_to_save_is_refused_on_construction() -> None:
    limit = sys.get_int_max_str_digits()
    ok = int("9" * limit)
    assert Settings(steps=ok).steps == ok
    assert Settings.from_json(Settings(steps=ok).to_json()).steps == ok
    with pytest.raises(ConfigError, match="field 'steps': an integer of more than"):
        Settings(steps=10 ** limit)
    with pytest.raises(ConfigError, match="field 'lr': int .* is too large for a float"):
        Settings(lr=10 ** 400)


@pytest.mark.parametrize("key", ["--5", "5-", "1.5", "", " 5", "\u00b2", "0x10"])
def test_a_bad_int_key_names_the_field_and_the_key(key: str) -> None:
    with pytest.raises(ConfigError, match=r"field 'labels': key .* is not an integer") as info:
        Settings.from_json(json.dumps({"labels": {key: "x"}}))
    assert repr(key) in str(info.value)


def test_int_keys_round_trip() -> None:
    cfg = Settings(labels={-5: "a", 0: "b", 12: "c"})
    assert Settings.from_json(cfg.to_json()) == cfg


# ---------------------------------------------------------------------------
# NaN and infinity


@pytest.mark.parametrize("text, field, shown", [
    ('{"lr": NaN}', "lr", "NaN"),
    ('{"lr": Infinity}', "lr", "Infinity"),
    ('{"lr": -Infinity}', "lr", "-Infinity"),
    ('{"lr": 1e400}', "lr", "inf"),
    ('{"lr": -1e400}', "lr", "-inf"),
    ('{"decay": 1e400}', "decay", "inf"),
    ('{"extra": {"a": [NaN]}}', r"extra\.a\[0\]", "NaN"),
    ('{"extra": 1e400}', "extra", "inf"),
])
def test_non_finite_floats_are_refused_on_load(text: str, field: str, shown: str) -> None:
    with pytest.raises(ConfigError, match=rf"field '{field}': {shown} is not"):
        Settings.from_json(text)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused_on_construction_and_assignment(value: float) -> None:
    with pytest.raises(ConfigError, match="Settings: field 'lr': .* a config float must be finite"):
        Settings(lr=value)
    with pytest.raises(ConfigError, match="field 'decay': .* must be finite"):
        Settings(decay=value)
    cfg = Settings()
    with pytest.raises(ConfigError, match="field 'lr'"):
        cfg.lr = value
    assert cfg.lr == 0.1
    with pytest.raises(ConfigError, match="field 'lr'"):
        cfg.with_lr(value)
    with pytest.raises(ConfigError, match=r"Settings: field 'extra\[0\]': nan cannot be saved"):
        Settings(extra=[math.nan]).to_json()


def test_finite_extremes_still_round_trip() -> None:
    cfg = Settings(lr=sys.float_info.max, decay=-sys.float_info.min)
    assert Settings.from_json(cfg.to_json()) == cfg


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"extra": {'quo"te[': "[" * 5000 + "{" * 5000, "k": ["]" * 10]}})
    assert Settings.from_json(text).extra["quo\"te["] == "[" * 5000 + "{" * 5000
