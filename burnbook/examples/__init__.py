"""Runnable examples: the programs the book's chapters build, as packages.

- `burnbook.examples.guide`: the Basic Workflow guide (a CNN trained on
  MNIST with the Learner, then used for inference);
  `python -m burnbook.examples.guide --epochs 1` runs it from a terminal.
- `burnbook.examples.arch_compare`: one small program on the Taichi backend,
  run in a child process per arch (`cpu`, `vulkan`, ...) and compared
  (chapter 05); `python -m burnbook.examples.arch_compare` runs it.
"""
