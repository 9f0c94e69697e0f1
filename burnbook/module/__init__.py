"""Modules: `Module`, `Param`, `ParamId`, and the visitor/mapper protocols."""

from .base import DuplicateParamIdError, Module
from .param import Param, ParamId, RunningState
from .visitor import ModuleMapper, ModuleVisitor

__all__ = ["Module", "DuplicateParamIdError", "Param", "ParamId", "RunningState", "ModuleVisitor", "ModuleMapper"]
