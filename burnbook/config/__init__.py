"""`@config`: Burn's `#[derive(Config)]` for Python classes.

A config is a small, serialisable value holding the hyper-parameters that
build something (`ModelConfig(...).init(device)`), as the Burn book's Config
section recommends::

    @config
    class ModelConfig:
        num_classes: int
        hidden_size: int
        dropout: float = 0.5

        def init(self, device) -> Model: ...

    cfg = ModelConfig(10, 512)            # required fields first, positional or keyword
    cfg = cfg.with_dropout(0.2)           # a new config; the old one is unchanged
    cfg.save("config.json")               # JSON, written atomically
    assert ModelConfig.load("config.json") == cfg

What the decorator gives a class (methods written in the class body win):

- a constructor taking the required fields first, then the defaulted ones,
  in declaration order; defaults are deep-copied per instance;
- type checks on construction, assignment and loading: `int` fields refuse
  `str` and `bool`, `float` fields accept ints (stored as floats), lists and
  tuples are converted to the annotated container, `Optional`/unions,
  `Literal`, `Enum` (saved by name) and nested config classes are understood;
  an unknown annotation accepts any value;
- `with_<field>(value)`, `to_dict()`/`from_dict(d)`, `to_json()`/
  `from_json(s)`, `save(path)`/`load(path)`, equality, a readable repr, and
  `str(cfg)` as pretty JSON (Burn's `Display` of a config);
- an optional `__post_init__(self)` hook, called at the end of every
  construction (including `with_*`, `from_dict` and `load`) for validation.

Every config is meant to be saved as standard JSON, so values JSON cannot
hold are refused up front with a `ConfigError` naming the field: NaN and
±infinity in `float` fields (on construction, assignment and loading alike;
JSON has no spelling for them, and a NaN learning rate would turn every
weight to NaN without a word), integers longer than the interpreter's
digit limit (`sys.get_int_max_str_digits()`), and data nested deeper than
100 levels (far beyond any real config, and deep enough to exhaust
Python's stack).

A nested config is saved as its dict. When the value's class is not exactly
the annotated one (a union of configs, or a subclass of the annotated config
class) it is saved tagged with its class name, `{"KaimingUniform": {...}}`,
the way Burn's serde writes enum variants, and found again by that name on
load. Fields whose names start with `_` and `ClassVar`s are not fields;
assigning to any other name that is not a field is an `AttributeError`, which
catches typos. Configs are mutable (as Burn's `pub` fields) and so unhashable.

`Config` is the same thing as a base class: `class ModelConfig(Config): ...`.
`isinstance(x, Config)` holds for both spellings.
"""

from .decorator import Config, config
from .errors import ConfigError
from .fields import is_config

__all__ = ["config", "Config", "ConfigError", "is_config"]
