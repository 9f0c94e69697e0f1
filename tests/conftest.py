"""Suite-wide hooks: tests that measure something (the ONNX conformance
table) attach a `report` property, and the terminal summary prints it, also
when the tests ran in xdist workers."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter) -> None:
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            for name, value in getattr(report, "user_properties", []):
                if name == "report" and report.when == "call":
                    terminalreporter.write_sep("-", report.nodeid.split("::")[-1])
                    terminalreporter.write_line(str(value))
