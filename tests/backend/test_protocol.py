"""The Backend protocol written out (burnbook/backend/protocol/): one stub per
op of FLOAT_OPS, INT_OPS, BOOL_OPS and AUTODIFF_OPS, and a stub counts as
missing everywhere a missing op used to (missing_ops, share_layout_ops, the
Autodiff decorator)."""

from __future__ import annotations

import pytest

from burnbook.backend import NdArray
from burnbook.backend.base import (
    ALL_OPS, AUTODIFF_OPS, BOOL_OPS, FLOAT_OPS, INT_OPS, LAYOUT_OPS, MODULE_OPS, Backend, share_layout_ops,
)
from burnbook.backend.protocol import AutodiffOps, BoolOps, FloatOps, IntOps, is_stub

DEFAULTS = ("float_relu", "float_sigmoid")   # written with other ops, not stubs


def _declared(cls: type, prefix: str) -> tuple:
    return tuple(name for name in vars(cls) if name.startswith(prefix))


@pytest.mark.parametrize("ops, cls, prefix", [
    (FLOAT_OPS, FloatOps, "float_"), (INT_OPS, IntOps, "int_"), (BOOL_OPS, BoolOps, "bool_"),
    (AUTODIFF_OPS, AutodiffOps, "float_"),
], ids=["float", "int", "bool", "autodiff"])
def test_the_op_tables_are_the_stubs_names(ops, cls, prefix):
    assert _declared(cls, prefix) == ops
    stubs = [name for name in ops if is_stub(vars(cls)[name])]
    assert stubs == [name for name in ops if name not in DEFAULTS]


def test_backend_inherits_every_stub():
    assert issubclass(Backend, (FloatOps, IntOps, BoolOps))
    assert not issubclass(Backend, AutodiffOps)
    for name in FLOAT_OPS + INT_OPS + BOOL_OPS:
        assert callable(getattr(Backend, name)), name


def test_an_empty_backend_misses_every_op_without_a_default():
    class Empty(Backend):
        pass

    assert Empty.missing_ops() == [op for op in ALL_OPS if op not in MODULE_OPS and op not in DEFAULTS]


def test_calling_a_stub_names_the_backend_and_the_op():
    class Half(Backend):
        pass

    with pytest.raises(NotImplementedError, match=r"Half does not implement float_exp"):
        Half.float_exp(None)
    with pytest.raises(NotImplementedError, match=r"Half does not implement bool_not"):
        Half.bool_not(None)


def test_a_complete_backend_misses_nothing_and_overrides_every_stub():
    assert NdArray.missing_ops() == []
    assert not any(is_stub(getattr(NdArray, op)) for op in ALL_OPS)


def test_is_stub_reads_functions_methods_and_descriptors():
    assert is_stub(Backend.float_exp)                     # a bound class method
    assert is_stub(vars(FloatOps)["float_exp"])           # the classmethod object
    assert is_stub(vars(FloatOps)["float_exp"].__func__)  # the function
    assert not is_stub(NdArray.float_exp) and not is_stub(Backend.float_relu)


def test_share_layout_ops_treats_a_stub_as_absent():
    class NoLayout(Backend):
        pass

    with pytest.raises(AttributeError, match="float_into_data"):   # the first of LAYOUT_OPS
        share_layout_ops(NoLayout)


def test_share_layout_ops_copies_the_float_ops():
    names = sorted(set(LAYOUT_OPS["int"]) | set(LAYOUT_OPS["bool"]))
    ns = {f"float_{n}": staticmethod(getattr(NdArray, f"float_{n}")) for n in names}
    layout = share_layout_ops(type("Layout", (Backend,), ns))
    assert layout.int_reshape is layout.float_reshape is layout.bool_reshape
    missing = layout.missing_ops()
    assert "int_reshape" not in missing and "bool_select" not in missing and "int_add" in missing


def test_autodiff_over_an_incomplete_backend_keeps_its_stubs():
    """An op the inner backend lacks stays the protocol's stub on Autodiff[B]:
    listed by missing_ops, a NotImplementedError naming Autodiff[B] when called."""
    from burnbook.autodiff import Autodiff

    class NoErf(NdArray):
        float_erf = FloatOps.__dict__["float_erf"]   # the stub again
        int_arange = IntOps.__dict__["int_arange"]

    B = Autodiff[NoErf]
    assert B.missing_ops() == ["float_erf", "int_arange"]
    with pytest.raises(NotImplementedError, match=r"Autodiff\[NoErf\] does not implement float_erf"):
        B.float_erf(None)
    assert not is_stub(B.float_exp)


def test_the_decorators_share_one_base():
    from burnbook.autodiff import Autodiff
    from burnbook.backend.decorator import Decorator

    assert issubclass(Autodiff, Decorator)
    assert Autodiff[NdArray] is Autodiff[NdArray]
    assert repr(Autodiff) == "Autodiff" and repr(Autodiff[NdArray]) == "Autodiff[NdArray]"
    assert Autodiff[NdArray]._rng is NdArray._rng
    with pytest.raises(TypeError, match=r"Autodiff\[NdArray\] is already parametrised"):
        Autodiff[NdArray][NdArray]


def test_fusion_uses_the_same_base():
    pytest.importorskip("taichi")
    from burnbook.backend.decorator import Decorator
    from burnbook.backend.fusion import Fusion
    from burnbook.backend.taichi import Taichi

    assert issubclass(Fusion, Decorator)
    B = Fusion[Taichi]
    assert B is Fusion[Taichi] and repr(B) == "Fusion[Taichi]" and B.name() == "fusion<taichi>"
    assert B.InnerBackend is B   # Fusion[B] is a plain backend: its own inner backend
    with pytest.raises(TypeError, match="put Fusion inside Autodiff"):
        from burnbook.autodiff import Autodiff
        Fusion[Autodiff[Taichi]]


def test_autodiff_declares_every_op_by_name_and_writes_its_own():
    from burnbook.autodiff import Autodiff

    assert sorted(Autodiff._declarations()) == sorted(ALL_OPS)
    assert not any(is_stub(getattr(Autodiff, op)) for op in AUTODIFF_OPS)


def test_fusion_names_every_op_but_the_protocol_defaults():
    pytest.importorskip("taichi")
    from burnbook.backend.fusion import Fusion

    assert sorted(op for op in ALL_OPS if op not in vars(Fusion)) == sorted(DEFAULTS)
