"""`Report`: what `check_backend` / `check_autodiff` found, per op family,
printed as a compact table (text in a terminal, HTML in a notebook).

A case ends in one of three ways: it *passes*; it *fails* (a wrong value,
shape or element type, or any exception other than a missing op), recorded
as a `Failure` naming the op, the inputs' shapes and dtypes, what was
expected and what came back; or it hits a *missing* op (the backend's method
is still the protocol's stub, or raised NotImplementedError), recorded as a
`Missing` naming the op the case is about and the ops it lacked.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

FAMILIES: tuple[str, ...] = ("creation", "arithmetic", "math", "comparison", "reductions",
                             "indexing", "layout", "int", "bool", "module")

_SHOWN = 5   # failures named in the printed report


@dataclass(frozen=True)
class Failure:
    """A case that ran and gave a wrong answer (or raised).

    `case` is the case's unique name, `op` the protocol op it checks,
    `inputs` the inputs' dtypes and shapes (`"f32[3, 4], f32[1, 4]"`),
    `expected` and `got` short descriptions, `message` one sentence that
    says what differs."""

    case: str
    op: str
    family: str
    inputs: str
    expected: str
    got: str
    message: str

    def __str__(self) -> str:
        return f"{self.case}: {self.message} (inputs {self.inputs or 'none'})"


@dataclass(frozen=True)
class Missing:
    """A case not attempted: `needs` are the ops the backend lacks for it
    (the case's own `op`, or one it builds on, such as `float_from_data`)."""

    case: str
    op: str
    family: str
    needs: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.case}: needs {', '.join(self.needs)}"


@dataclass
class FamilyCount:
    passed: int = 0
    failed: int = 0
    missing: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.missing


@dataclass
class Report:
    """The result of a conformance run on `backend` (its name).

    - `passed`, `failed`, `missing`: case counts (ints);
    - `failures`: the `Failure`s, in the order run; `missed`: the `Missing`s;
    - `families`: family -> `FamilyCount`; `missing_ops`: the ops the
      backend lacks, sorted; `ok`: no failure and nothing missing;
    - `failed_ops`: the ops with at least one failing case.

    `str(report)` is a compact text table; in a notebook the report shows
    as an HTML table (one row per family), then the first failures."""

    backend: str
    title: str = "check_backend"
    families: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    missed: list = field(default_factory=list)
    passed_cases: list = field(default_factory=list)

    # -- recording (the runner) ---------------------------------------------------------
    def _count(self, family: str) -> FamilyCount:
        return self.families.setdefault(family, FamilyCount())

    def add_pass(self, case: str, family: str) -> None:
        self._count(family).passed += 1
        self.passed_cases.append(case)

    def add_failure(self, failure: Failure) -> None:
        self._count(failure.family).failed += 1
        self.failures.append(failure)

    def add_missing(self, missing: Missing) -> None:
        self._count(missing.family).missing += 1
        self.missed.append(missing)

    # -- reading --------------------------------------------------------------------------
    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.families.values())

    @property
    def failed(self) -> int:
        return sum(c.failed for c in self.families.values())

    @property
    def missing(self) -> int:
        return sum(c.missing for c in self.families.values())

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.missing == 0

    @property
    def missing_ops(self) -> list[str]:
        """Every op some case needed and the backend lacks, sorted."""
        return sorted({op for m in self.missed for op in m.needs})

    @property
    def failed_ops(self) -> list[str]:
        """Every op with at least one failing case, sorted."""
        return sorted({f.op for f in self.failures})

    def _rows(self) -> list[tuple[str, FamilyCount]]:
        order = [f for f in FAMILIES if f in self.families]
        order += sorted(f for f in self.families if f not in FAMILIES)
        return [(f, self.families[f]) for f in order]

    def summary(self) -> str:
        verdict = "all passed" if self.ok else "not yet"
        return (f"{self.title}({self.backend}): {self.passed} passed, {self.failed} failed, "
                f"{self.missing} missing: {verdict}")

    def __str__(self) -> str:
        lines = [self.summary(), f"  {'family':<12}{'passed':>8}{'failed':>8}{'missing':>9}"]
        for family, c in self._rows():
            lines.append(f"  {family:<12}{c.passed:>8}{c.failed:>8}{c.missing:>9}")
        if self.failures:
            lines.append(f"first failures ({min(len(self.failures), _SHOWN)} of {len(self.failures)}):")
            lines += [f"  {f}" for f in self.failures[:_SHOWN]]
        if self.missed:
            ops = self.missing_ops
            shown = ", ".join(ops[:12]) + (f", ... ({len(ops) - 12} more)" if len(ops) > 12 else "")
            lines.append(f"missing ops ({len(ops)}): {shown}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        e = html.escape
        color = "#1a7f37" if self.ok else "#b35900"
        rows = "".join(
            f"<tr><td style='text-align:left'>{e(f)}</td><td>{c.passed}</td>"
            f"<td style='color:{'#c00' if c.failed else 'inherit'}'>{c.failed}</td>"
            f"<td>{c.missing}</td></tr>"
            for f, c in self._rows())
        out = [f"<div><b style='color:{color}'>{e(self.summary())}</b>",
               "<table><thead><tr><th style='text-align:left'>family</th><th>passed</th>"
               f"<th>failed</th><th>missing</th></tr></thead><tbody>{rows}</tbody></table>"]
        if self.failures:
            items = "".join(
                f"<li><code>{e(f.op)}</code> {e(f.case)}: {e(f.message)} "
                f"(inputs {e(f.inputs or 'none')}; expected {e(f.expected)}; got {e(f.got)})</li>"
                for f in self.failures[:_SHOWN])
            out.append(f"<p>first failures ({min(len(self.failures), _SHOWN)} of "
                       f"{len(self.failures)}):</p><ul>{items}</ul>")
        if self.missed:
            ops = self.missing_ops
            out.append(f"<p>missing ops ({len(ops)}): <code>{e(', '.join(ops))}</code></p>")
        out.append("</div>")
        return "".join(out)
