"""burnbook's benchmark harness (`make bench`, i.e. `python benchmarks/run.py`).

- `harness`: profiles (time budgets), timing loops, statistics, the runner.
- `frameworks`: NumPy, the burnbook backends and PyTorch behind one small adapter.
- `cases/`: the benchmark families (dispatch, element-wise, reductions,
  matmul, autodiff), each a list of `Case`s.
- `bars`: the performance bars of the issues, checked as PASS/FAIL.
- `report`: the Markdown written to `benchmarks/results.md`.
"""
