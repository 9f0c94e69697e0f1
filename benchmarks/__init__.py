"""burnbook's benchmark harness (`make bench`, i.e. `python benchmarks/run.py`).

- `harness`: timing loops and the runner (it re-exports the names below).
- `profiles`: a run's time budget and sizes (`FULL`, `QUICK`, `SMOKE`).
- `measurement`: a `Case` and what measuring it gives (`Stats`, `CaseResult`).
- `formatting`: times, ratios, sizes and errors as the logs and report write them.
- `frameworks`: NumPy, the burnbook backends and PyTorch behind one small adapter.
- `cases/`: the benchmark families (dispatch, element-wise, reductions,
  matmul, autodiff), each a list of `Case`s.
- `bars`: the performance bars of the issues, checked as PASS/FAIL.
- `report`: the Markdown written to `benchmarks/results.md`.
"""
