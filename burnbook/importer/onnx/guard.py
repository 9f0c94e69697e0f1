"""The check every generated module passes before it is executed or written:
its source is parsed with `ast` and held against an allowlist of what the
code generator emits. It is a second line of defence behind `lowering.quote`
and `lowering.identifier`: an emitter that let text from the ONNX file turn
into code would produce a construct outside the allowlist (an `Import`, a
call of `__import__` or `exec`, a comprehension, an f-string, ...) and the
model is refused with an `OnnxImportError` naming that construct and line.

The allowlist is the generator's output for the operator table, not Python
at large: one class deriving from `Module`, with field declarations and the
methods `new`, `from_file`, `default` and `forward`, whose bodies are
assignments and a `return` of calls, arithmetic and literals (in `forward`,
also an ONNX Loop's `while onnx_ops.loop_continues(...):` block and an ONNX If's
`if onnx_ops.if_taken(<name>): ... else: ...`, of assignments and such blocks). Names must be
bound (imports, arguments, earlier assignments) or one of a few builtins,
and attribute names come from burnbook's tensor, layer and runtime API.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from . import runtime
from .graph import OnnxImportError

__all__ = ["check_source", "ALLOWED_IMPORTS", "ALLOWED_ATTRIBUTES"]

ALLOWED_IMPORTS: dict[str, set[str]] = {
    "__future__": {"annotations"},
    "pathlib": {"Path"},
    "typing": {"Any"},
    "burnbook": {"Bool", "Float", "Int", "Tensor", "nn"},
    "burnbook.importer.onnx": {"runtime"},
    "burnbook.module": {"Module", "Param", "replay_call"},
    "burnbook.nn.common": {"resolve_backend"},
    "burnbook.record": {"FullPrecisionSettings", "NamedMpkFileRecorder"},
    "burnbook.tensor": {"activation", "module"},
    "burnbook.tensor.ops": {"ConvOptions", "ConvTransposeOptions"},
}
"""module -> the names the generated code may import from it."""

_TENSOR_METHODS = {
    "bool", "cat", "clamp", "clamp_max", "clamp_min", "dims", "equal", "erf", "exp", "expand", "flatten", "float",
    "int", "log", "mask_where", "matmul", "mean_dim", "permute", "powf", "powf_scalar", "reshape", "slice", "sqrt",
    "squeeze", "sum_dim", "tanh", "transpose", "unsqueeze", "unsqueeze_dim", "zeros", "val",
}
_LAYERS = {
    "BatchNorm", "BatchNormConfig", "Conv1d", "Conv1dConfig", "Conv2d", "Conv2dConfig", "ConvTranspose1d",
    "ConvTranspose1dConfig", "ConvTranspose2d", "ConvTranspose2dConfig", "Dropout", "DropoutConfig", "LayerNorm",
    "LayerNormConfig", "Linear", "LinearConfig", "PaddingConfig1d", "PaddingConfig2d", "Explicit", "init",
    "with_bias", "with_dilation", "with_groups", "with_padding", "with_padding_out", "with_stride",
}
_FUNCTIONS = {  # burnbook.tensor.activation and burnbook.tensor.module (F)
    "gelu", "leaky_relu", "log_softmax", "relu", "sigmoid", "softmax", "avg_pool1d", "avg_pool2d", "conv1d",
    "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
}
_LOADING = {"default_device", "from_file", "load", "load_record", "new", "with_name"}
# names the later operator families emit (one set per family module in ops/)
_ELEMENTWISE = {  # ops/elementwise: Tensor methods and activation functions
    "abs", "bool_and", "bool_not", "bool_or", "cos", "equal_elem", "greater", "greater_elem", "greater_equal",
    "greater_equal_elem", "is_nan", "lower", "lower_elem", "lower_equal", "lower_equal_elem", "mask_fill", "neg",
    "not_equal", "recip", "remainder", "remainder_scalar", "sign", "sin", "hard_sigmoid", "mish", "silu",
    "softplus",
}
_INDEX = {"abs", "argmax", "argmin", "gather", "log", "max_dim", "min_dim", "scatter", "sqrt", "squeeze"}
_SHAPE = {"chunk", "repeat", "tril", "triu"}
_NORM: set[str] = {"GroupNorm", "GroupNormConfig", "abs", "max_dim", "sum_dim", "sqrt", "powf_scalar"}
_RECURRENT: set[str] = {"Gru", "GruConfig", "Lstm", "LstmConfig", "narrow", "stack"}
_RUNTIME = {name for name, fn in vars(runtime).items()
            if not name.startswith("_") and callable(fn)
            and str(getattr(fn, "__module__", "")).startswith(runtime.__name__)}

ALLOWED_ATTRIBUTES = frozenset(_TENSOR_METHODS | _LAYERS | _FUNCTIONS | _LOADING | _RUNTIME | _ELEMENTWISE | _INDEX
                               | _SHAPE | _NORM | _RECURRENT)
"""Attribute names the generated code may use, besides `self.<field>`."""

_BUILTINS = {"slice", "float", "classmethod", "type", "tuple", "__file__"}
_CALLABLE_BUILTINS = {"slice", "float"}
_METHODS = {"new": True, "from_file": True, "default": True, "forward": False}  # name -> is a classmethod
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_CONSTANTS = (int, float, str, bool, type(None))


class _Refused(Exception):
    """The first construct outside the allowlist: where (a node or a line number) and what."""

    def __init__(self, where: ast.AST | int | None, what: str) -> None:
        super().__init__(what)
        self.line = where if isinstance(where, int) else getattr(where, "lineno", None)
        self.what = what


def _kind(node: ast.AST) -> str:
    return type(node).__name__


def check_source(source: str, class_name: str | None = "Model", origin: str = "the ONNX model") -> ast.Module:
    """Parse generated `source` and hold it against the allowlist; returns the
    tree, or raises OnnxImportError naming the first construct outside it
    (its node type and line). `class_name=None` accepts any class name."""
    try:
        _check_text(source)
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            raise _Refused(None, f"the code does not parse ({type(err).__name__}: {err})") from err
        try:
            _Checker(class_name).module(tree)
        except RecursionError:
            raise _Refused(None, "expressions nested too deeply to check") from None
    except _Refused as refused:
        where = f"line {refused.line}: " if refused.line is not None else ""
        raise OnnxImportError(
            f"refusing {origin}: the generated code failed the safety check ({where}{refused.what}); "
            "nothing was run or written") from None
    return tree


def _check_text(source: str) -> None:
    """Printable ASCII and newlines only: every literal the generator writes
    is `ascii()`-escaped, so anything else (a carriage return, a form feed,
    U+2028, a bidirectional override, a NUL) came from somewhere it should not."""
    found = _FOREIGN_CHARACTER.search(source)
    if found:
        line = source.count("\n", 0, found.start()) + 1
        raise _Refused(line, f"character {ascii(found.group())} outside printable ASCII")


_FOREIGN_CHARACTER = re.compile(r"[^\n\x20-\x7e]")


class _Checker:
    """Walks the tree top-down; each method accepts exactly the shapes the
    generator writes in its position."""

    def __init__(self, class_name: str | None) -> None:
        self.class_name = class_name
        self.module_names: set[str] = set()
        self.fields: set[str] = set()

    # -- module level ---------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        body = list(tree.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        classes = [s for s in body if isinstance(s, ast.ClassDef)]
        if len(classes) != 1:
            raise _Refused(classes[1] if len(classes) > 1 else tree, f"{len(classes)} classes (exactly one expected)")
        for stmt in body:
            if isinstance(stmt, ast.ImportFrom):
                self.import_from(stmt)
            elif isinstance(stmt, ast.Assign):
                self.module_constant(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.class_def(stmt)
            else:
                raise _Refused(stmt, f"{_kind(stmt)} statement at module level")

    def import_from(self, stmt: ast.ImportFrom) -> None:
        allowed = ALLOWED_IMPORTS.get(stmt.module or "")
        if stmt.level or allowed is None:
            raise _Refused(stmt, f"ImportFrom of module {'.' * stmt.level}{stmt.module}")
        for alias in stmt.names:
            if alias.name not in allowed:
                raise _Refused(stmt, f"ImportFrom of {alias.name!r} from {stmt.module}")
            bound = alias.asname or alias.name
            if bound.startswith("__"):
                raise _Refused(stmt, f"ImportFrom binding {bound!r}")
            if stmt.module != "__future__":
                self.module_names.add(bound)

    def module_constant(self, stmt: ast.Assign) -> None:
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if not (isinstance(target, ast.Name) and target.id == "RECORD_NAME"
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
            raise _Refused(stmt, "Assign at module level other than RECORD_NAME = '<name>'")
        self.module_names.add("RECORD_NAME")

    def class_def(self, cls: ast.ClassDef) -> None:
        if self.class_name is not None and cls.name != self.class_name:
            raise _Refused(cls, f"ClassDef {cls.name!r} (expected {self.class_name!r})")
        if cls.decorator_list or cls.keywords or len(cls.bases) != 1 or not _is_name(cls.bases[0], "Module"):
            raise _Refused(cls, f"ClassDef {cls.name!r} must derive from Module alone, without decorators")
        self.module_names.add(cls.name)
        body = list(cls.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        for stmt in body:  # fields first, so `self.<field>` is known inside the methods
            if isinstance(stmt, ast.AnnAssign):
                if not (isinstance(stmt.target, ast.Name) and stmt.value is None and stmt.simple):
                    raise _Refused(stmt, "AnnAssign in the class that is not a bare field declaration")
                if stmt.target.id.startswith("_"):
                    raise _Refused(stmt, f"field {stmt.target.id!r} starting with an underscore")
                self.annotation(stmt.annotation)
                self.fields.add(stmt.target.id)
        seen: set[str] = set()
        for stmt in body:
            if isinstance(stmt, ast.AnnAssign):
                continue
            if _is_replay_hook(stmt) and "_replay" not in seen:
                seen.add("_replay")
                continue
            if not isinstance(stmt, ast.FunctionDef):
                raise _Refused(stmt, f"{_kind(stmt)} statement in the class body")
            if stmt.name not in _METHODS or stmt.name in seen:
                raise _Refused(stmt, f"FunctionDef {stmt.name!r} (the class has new, from_file, default, forward)")
            seen.add(stmt.name)
            self.method(stmt)

    # -- methods --------------------------------------------------------------------
    def method(self, fn: ast.FunctionDef) -> None:
        decorators = [d.id for d in fn.decorator_list if isinstance(d, ast.Name)]
        expected = ["classmethod"] if _METHODS[fn.name] else []
        if len(decorators) != len(fn.decorator_list) or decorators != expected:
            raise _Refused(fn, f"decorators of {fn.name!r} (expected {expected or 'none'})")
        args = fn.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise _Refused(fn, f"FunctionDef {fn.name!r} with *args, **kwargs or keyword-only arguments")
        for default in args.defaults:
            if not (isinstance(default, ast.Constant) and default.value is None):
                raise _Refused(default, f"default value {_kind(default)} (only None)")
        local = {a.arg for a in args.args}
        for a in args.args:
            if a.arg.startswith("__"):
                raise _Refused(a, f"argument {a.arg!r}")
            if a.annotation is not None:
                self.annotation(a.annotation)
        if fn.returns is not None:
            self.annotation(fn.returns)
        body = list(fn.body)
        if body and _is_docstring(body[0]):
            body = body[1:]
        if not body or not isinstance(body[-1], ast.Return):
            raise _Refused(fn, f"FunctionDef {fn.name!r} does not end in a return")
        for stmt in body:
            if isinstance(stmt, ast.Return):
                if stmt is not body[-1] or stmt.value is None:
                    raise _Refused(stmt, "Return that is not the method's last statement")
                self.expr(stmt.value, local)
            elif not self.statement(stmt, local, blocks=fn.name == "forward"):
                raise _Refused(stmt, f"{_kind(stmt)} statement in {fn.name!r}")

    def statement(self, stmt: ast.stmt, local: set[str], blocks: bool = True) -> bool:
        """Check an assignment, or (where `blocks`) a Loop's `while` or an If's
        `if`, binding what it binds in `local`; False for any other statement."""
        if isinstance(stmt, ast.Assign):
            self.assign(stmt, local)
        elif isinstance(stmt, ast.While) and blocks:
            self.loop(stmt, local)
        elif isinstance(stmt, ast.If) and blocks:
            self.branch(stmt, local)
        else:
            return False
        return True

    def assign(self, stmt: ast.Assign, local: set[str]) -> None:
        self.expr(stmt.value, local)
        for target in stmt.targets:
            for name in _targets(target):
                if name.startswith("__"):
                    raise _Refused(stmt, f"assignment to {name!r}")
                local.add(name)

    def loop(self, stmt: ast.While, local: set[str]) -> None:
        """An ONNX Loop: `while onnx_ops.loop_continues(...):` over assignments
        and inner blocks, no `else`. Names first bound inside stay inside: the
        body may run zero times, so only names bound before it are read after."""
        test = stmt.test
        if not self.runtime_call(test, "loop_continues"):
            raise _Refused(stmt, "While whose test is not onnx_ops.loop_continues(...)")
        if stmt.orelse:
            raise _Refused(stmt, "While with an else block")
        self.expr(test, local)
        self.block(stmt.body, set(local), "a loop")

    def branch(self, stmt: ast.If, local: set[str]) -> None:
        """An ONNX If with a runtime condition: `if onnx_ops.if_taken(<name>):`
        with an `else`, both of assignments and inner blocks. After it only
        names bound before it or in both branches (the If's outputs) are read."""
        test = stmt.test
        if not (self.runtime_call(test, "if_taken") and len(test.args) == 1 and not test.keywords
                and isinstance(test.args[0], ast.Name)):
            raise _Refused(stmt, "If whose test is not onnx_ops.if_taken(<name>)")
        if not stmt.orelse:
            raise _Refused(stmt, "If without an else block")
        self.expr(test, local)
        taken = self.block(stmt.body, set(local), "an if branch")
        other = self.block(stmt.orelse, set(local), "an if branch")
        local.update(taken & other)

    def block(self, body: list[ast.stmt], inner: set[str], where: str) -> set[str]:
        """The statements of a loop or branch, checked with names bound
        before it in `inner`; returns `inner` with the names they bind."""
        for sub in body:
            if not self.statement(sub, inner):
                raise _Refused(sub, f"{_kind(sub)} statement in {where}")
        return inner

    def runtime_call(self, test: ast.expr, helper: str) -> bool:
        """Whether `test` calls `onnx_ops.<helper>`, the module imported as onnx_ops."""
        return (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == helper
                and _is_name(test.func.value, "onnx_ops") and "onnx_ops" in self.module_names)

    def annotation(self, node: ast.expr) -> None:
        """Annotations (never evaluated: the module has postponed
        annotations) may name types, subscript them and join them with `|`."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            self.annotation(node.left)
            self.annotation(node.right)
        elif isinstance(node, ast.Subscript):
            self.annotation(node.value)
            self.annotation(node.slice)
        elif isinstance(node, ast.Tuple):
            for elt in node.elts:
                self.annotation(elt)
        elif isinstance(node, ast.Attribute):
            self.annotation(node.value)
            self.attribute_name(node)
        elif isinstance(node, ast.Name):
            if node.id not in self.module_names and node.id not in _BUILTINS:
                raise _Refused(node, f"Name {node.id!r} in an annotation")
        elif isinstance(node, ast.Constant):
            self.constant(node)
        else:
            raise _Refused(node, f"{_kind(node)} in an annotation")

    # -- expressions ----------------------------------------------------------------
    def expr(self, node: ast.expr, local: set[str]) -> None:
        if isinstance(node, ast.Constant):
            self.constant(node)
        elif isinstance(node, ast.Name):
            self.name(node, local)
        elif isinstance(node, ast.Attribute):
            self.expr(node.value, local)  # inner first: `__import__(...).system` names the import
            if _is_name(node.value, "self"):
                if node.attr not in self.fields:
                    raise _Refused(node, f"Attribute self.{node.attr} (not a declared field)")
            else:
                self.attribute_name(node)
        elif isinstance(node, ast.Call):
            self.call(node, local)
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, _OPERATORS):
                raise _Refused(node, f"BinOp {_kind(node.op)}")
            self.expr(node.left, local)
            self.expr(node.right, local)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub):
                raise _Refused(node, f"UnaryOp {_kind(node.op)}")
            self.expr(node.operand, local)
        elif isinstance(node, ast.Compare):
            if not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                raise _Refused(node, "Compare other than `is` / `is not`")
            self.exprs([node.left, *node.comparators], local)
        elif isinstance(node, ast.IfExp):
            self.exprs([node.test, node.body, node.orelse], local)
        elif isinstance(node, (ast.List, ast.Tuple)):
            self.exprs(node.elts, local)
        elif isinstance(node, ast.Subscript):
            self.expr(node.value, local)
            self.expr(node.slice, local)
        else:
            raise _Refused(node, f"{_kind(node)} expression")

    def exprs(self, nodes: Iterable[ast.expr], local: set[str]) -> None:
        for node in nodes:
            self.expr(node, local)

    def call(self, node: ast.Call, local: set[str]) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in _CALLABLE_BUILTINS and func.id not in self.module_names and func.id != "cls":
                raise _Refused(node, f"Call of {func.id!r}")
        elif not isinstance(func, ast.Attribute):
            raise _Refused(node, f"Call of a {_kind(func)}")
        self.expr(func, local)
        self.exprs(node.args, local)
        for kw in node.keywords:
            if kw.arg is None or kw.arg.startswith("__"):
                raise _Refused(kw.value, f"keyword argument {'**' if kw.arg is None else kw.arg!r}")
            self.expr(kw.value, local)

    def name(self, node: ast.Name, local: set[str]) -> None:
        if node.id not in local and node.id not in self.module_names and node.id not in _BUILTINS:
            raise _Refused(node, f"Name {node.id!r} (not imported, an argument or assigned before)")

    def attribute_name(self, node: ast.Attribute) -> None:
        if node.attr not in ALLOWED_ATTRIBUTES:
            raise _Refused(node, f"Attribute {node.attr!r} (not part of the API generated code calls)")

    def constant(self, node: ast.Constant) -> None:
        if type(node.value) not in _CONSTANTS:
            raise _Refused(node, f"Constant of type {type(node.value).__name__}")


def _is_replay_hook(stmt: ast.stmt) -> bool:
    """`_replay = replay_call`, the one assignment a generated class makes
    (`Module`'s hook: on NdArray, calls replay a recording, `module/replay.py`)."""
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _is_name(stmt.targets[0], "_replay")
            and _is_name(stmt.value, "replay_call"))


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _targets(target: ast.expr) -> list[str]:
    """The names an assignment binds: a Name or a flat Tuple of Names."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
        return [t.id for t in target.elts]
    raise _Refused(target, f"assignment to a {_kind(target)}")
