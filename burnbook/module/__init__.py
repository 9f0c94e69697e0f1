"""Modules: `Module`, `Param`, `ParamId`, the visitor/mapper protocols, and
`replay_call`, the hook through which a module class's calls replay a
recording of its NdArray forward pass (`replay.py`)."""

from .base import DuplicateParamIdError, Module
from .param import Param, ParamId, RunningState
from .replay import replay_call
from .visitor import ModuleMapper, ModuleVisitor

__all__ = ["Module", "DuplicateParamIdError", "Param", "ParamId", "RunningState", "ModuleVisitor", "ModuleMapper",
           "replay_call"]
