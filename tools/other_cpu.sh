#!/usr/bin/env bash
# Run a command as if on another CPU, so stored notebook outputs and shipped
# assets can be checked for numbers that hold only on the machine that made them.
#
#   tools/other_cpu.sh .venv/bin/python -m pytest --nbval ... notebooks/en/12-learner.ipynb
#
# Each knob swaps in other kernels, which round differently in the last bits:
# - OpenBLAS (NumPy's matmul/dot): Prescott's SSE3 kernels instead of Haswell/Zen's;
# - NumPy's own loops (exp, log, tanh, ...): its AVX2/FMA3 dispatch switched off;
# - PyTorch (the oracle, chapter 20's assets): ATen's scalar kernels instead of AVX2;
# - one thread for OpenMP, OpenBLAS and Taichi, so reductions split differently.
# Taichi's LLVM code is still compiled for this CPU; nothing here emulates that.
set -euo pipefail
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Prescott}"
export NPY_DISABLE_CPU_FEATURES="${NPY_DISABLE_CPU_FEATURES:-AVX2 FMA3 X86_V3}"
export ATEN_CPU_CAPABILITY="${ATEN_CPU_CAPABILITY:-default}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
export TI_CPU_MAX_NUM_THREADS="${TI_CPU_MAX_NUM_THREADS:-1}"
exec "$@"
