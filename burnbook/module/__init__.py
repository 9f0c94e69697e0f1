"""Modules: `Module`, `Param`, `ParamId`, and the visitor/mapper protocols."""

from .base import Module
from .param import Param, ParamId
from .visitor import ModuleMapper, ModuleVisitor

__all__ = ["Module", "Param", "ParamId", "ModuleVisitor", "ModuleMapper"]
