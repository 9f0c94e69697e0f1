"""The house's rules, read statically from the source (docs/ARCHITECTURE.md).

- Imports run one way: no cycle among the modules of burnbook/, kernels/
  (`burnbook.kernels`) and widgets/ (`burnbook.widgets`), counting every
  import statement (module level, inside functions, under TYPE_CHECKING).
- kernels/ is the bottom layer: it imports nothing from `burnbook.backend`.
- No source file over 500 lines.
- Definitions an editor can follow: `Tensor.exp` names `float_exp`, and each
  backend (NdArray, Taichi, Fusion, Autodiff) writes `float_exp` out in a
  class body, Autodiff's naming its backward rule.
"""

from __future__ import annotations

import ast
import re
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"burnbook": ROOT / "burnbook", "burnbook.kernels": ROOT / "kernels",
            "burnbook.widgets": ROOT / "widgets"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module's dotted name -> (file, is a package __init__)."""
    mods = {}
    for pkg, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = (path, is_pkg)
    return mods


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module that `name` (a module or a name inside one) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _edges(module: str) -> set[str]:
    """The burnbook modules `module` imports anywhere in its source;
    `from pkg import x` counts as pkg.x when that is a module, else pkg."""
    path, is_pkg = MODULES[module]
    here = module if is_pkg else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [_owner(a.name) for a in node.names if a.name.startswith("burnbook")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = here
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                base = pkg + ("." + base if base else "")
            if not base.startswith("burnbook"):
                continue
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else _owner(base) for a in node.names]
        else:
            continue
        out.update(t for t in targets if t and t != module)
    return out


GRAPH = {m: _edges(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles (each a set of modules that import each other):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_kernels_are_the_bottom_layer():
    up = sorted((m, t) for m in GRAPH if m.startswith("burnbook.kernels")
                for t in GRAPH[m] if not t.startswith("burnbook.kernels"))
    assert not up, f"kernels/ imports from above it: {up}"


@pytest.mark.parametrize("lower, upper", [
    ("burnbook.backend", "burnbook.tensor"),
    ("burnbook.tensor", "burnbook.autodiff"),
    ("burnbook.tensor", "burnbook.module"),
    ("burnbook.autodiff", "burnbook.module"),
    ("burnbook.module", "burnbook.nn"),
    ("burnbook.nn", "burnbook.train"),
    ("burnbook.optim", "burnbook.train"),
])
def test_layers_import_downward(lower, upper):
    up = sorted((m, t) for m in GRAPH if m == lower or m.startswith(lower + ".")
                for t in GRAPH[m] if t == upper or t.startswith(upper + "."))
    assert not up, f"{lower} imports {upper}, a layer above it: {up}"


def test_the_core_never_imports_the_notebook_layers():
    core = [m for m in GRAPH if not m.startswith(("burnbook.widgets", "burnbook.importer", "burnbook.book",
                                                  "burnbook.examples", "burnbook.train"))]
    up = sorted((m, t) for m in core for t in GRAPH[m] if t.startswith(("burnbook.widgets", "burnbook.importer")))
    assert not up, f"core modules import widgets or the importer: {up}"


def test_no_source_file_over_500_lines():
    long = {str(path.relative_to(ROOT)): n for path, _ in MODULES.values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, f"files over 500 lines: {long}"


# -- go-to-definition: from Tensor.exp to every backend and to the rule ------------------------
def _class_defines(cls: type, name: str) -> tuple[type, ast.AST]:
    """The class of cls's MRO whose *source* defines `name` in its body (a def
    or an assignment), and that statement: what an editor jumps to."""
    for klass in cls.__mro__:
        if name not in vars(klass):
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        tree = ast.parse(inspect.cleandoc("\n" + source) if source[0].isspace() else source)
        body = tree.body[0].body
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return klass, stmt
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return klass, stmt
        raise AssertionError(f"{klass.__name__}.{name} exists but is not written in the class body (made by setattr?)")
    raise AssertionError(f"no class of {cls.__name__}'s MRO defines {name}")


def test_tensor_exp_names_the_backend_op():
    from burnbook import Tensor

    klass, stmt = _class_defines(Tensor, "exp")
    names = {n.attr for n in ast.walk(stmt) if isinstance(n, ast.Attribute)}
    assert "float_exp" in names, f"{klass.__name__}.exp does not call the backend's float_exp by name"


def test_every_backend_writes_float_exp_out():
    from burnbook.backend import Autodiff, Fusion, NdArray, Taichi
    from burnbook.backend.base import Backend
    from burnbook.backend.protocol import is_stub

    declared, protocol = _class_defines(Backend, "float_exp")
    assert isinstance(protocol, ast.FunctionDef) and is_stub(vars(declared)["float_exp"]), (
        "the Backend protocol declares float_exp (a stub an editor lands on)")
    for backend, folder in ((NdArray, "burnbook/backend/ndarray"), (Taichi, "burnbook/backend/taichi"),
                            (Fusion, "burnbook/backend/fusion"), (Autodiff, "burnbook/autodiff")):
        klass, _ = _class_defines(backend, "float_exp")
        assert not is_stub(vars(klass)["float_exp"]), f"{backend.__name__} has only the protocol's float_exp"
        assert str(ROOT / folder) in inspect.getsourcefile(klass), (backend, inspect.getsourcefile(klass))


def test_autodiff_float_exp_names_its_backward_rule():
    from burnbook.autodiff import ops
    from burnbook.backend import Autodiff

    _, stmt = _class_defines(Autodiff, "float_exp")
    value = stmt if isinstance(stmt, ast.FunctionDef) else stmt.value
    named = {n.attr for n in ast.walk(value) if isinstance(n, ast.Attribute)}
    named |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    rule = ops.TABLE["float_exp"].rule
    assert rule.__name__ in named, (
        f"Autodiff's float_exp ({ast.unparse(stmt)!r}) does not name its rule {rule.__qualname__}")
    assert "B.float_mul" in inspect.getsource(rule), "rules take the backend as B"


def test_the_map_names_files_that_exist():
    """docs/ARCHITECTURE.md walks an op through named files: each must exist."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = set()
    for span in re.findall(r"`([^`\s]+)`", text):
        for path in re.sub(r"\{([^}]*)\}", lambda m: "|" + m.group(1) + "|", span).split(" "):
            if "/" in path and (path.endswith(".py") or path.endswith("/") or "|" in path):
                head, _, rest = path.partition("|")
                options, _, tail = rest.partition("|")
                named |= {head + o + tail for o in options.split(",")} if rest else {path}
    assert len(named) > 20
    # A path is relative to the repository, the package, or the package the sentence is about.
    roots = [ROOT, ROOT / "burnbook"] + [ROOT / "burnbook" / d for d in ("backend", "backend/taichi", "importer/onnx")]
    missing = sorted(p for p in named if not any((r / p).exists() for r in roots))
    assert not missing, f"docs/ARCHITECTURE.md names files that do not exist: {missing}"
