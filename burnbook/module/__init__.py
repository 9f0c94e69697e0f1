"""Modules: `Module`, `Param`, `ParamId`, and the visitor/mapper protocols."""

from .base import Module
from .param import Param, ParamId, RunningState
from .visitor import ModuleMapper, ModuleVisitor

__all__ = ["Module", "Param", "ParamId", "RunningState", "ModuleVisitor", "ModuleMapper"]
