"""Where a config class keeps its fields: the class attributes `@config`
sets, `is_config`, and the field annotations resolved once and cached."""

from __future__ import annotations

import inspect
import typing
from typing import Any


_FIELDS = "__config_fields__"  # field names in declaration order
_DEFAULTS = "__config_defaults__"  # name -> default, for fields that have one
_TYPES = "__config_types__"  # name -> resolved annotation (filled lazily)
_LOCALNS = "__config_localns__"  # the defining scope, to resolve string annotations
_NO_DEFAULT = inspect.Parameter.empty


def is_config(obj: Any) -> bool:
    """True for a config class or a config instance."""
    klass = obj if isinstance(obj, type) else type(obj)
    return any(_FIELDS in vars(k) for k in klass.__mro__)


def _types(cls: type) -> dict[str, Any]:
    """The resolved field annotations of a config class, cached on first use."""
    cached = cls.__dict__.get(_TYPES)
    if cached is not None:
        return cached
    localns: dict = {}
    for klass in reversed(cls.__mro__):
        localns.update(klass.__dict__.get(_LOCALNS) or {})
        localns[klass.__name__] = klass
    try:
        hints = typing.get_type_hints(cls, localns=localns)
    except Exception as err:  # a NameError for an annotation naming an unknown class
        raise TypeError(f"{cls.__name__}: cannot resolve its field annotations: {err}") from None
    resolved = {name: hints.get(name, Any) for name in getattr(cls, _FIELDS)}
    setattr(cls, _TYPES, resolved)
    return resolved
