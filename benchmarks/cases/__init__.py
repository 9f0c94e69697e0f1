"""The benchmark families, in report order. Each module has `FAMILY`, `TITLE`,
`INTRO` (a paragraph for the report) and `cases(profile) -> list[Case]`."""

from . import (autodiff, dashboard, dispatch, distributed, elementwise, fusion, matmul, reductions, training,
               transformer, zoo)

FAMILIES = (dispatch, elementwise, reductions, matmul, autodiff, fusion, training, transformer, dashboard, distributed,
            zoo)


def all_cases(profile) -> list:
    return [case for family in FAMILIES for case in family.cases(profile)]


def family(name: str):
    for module in FAMILIES:
        if module.FAMILY == name:
            return module
    raise KeyError(name)
