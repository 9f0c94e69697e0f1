#!/usr/bin/env bash
# Run a command as if on another CPU, so stored notebook outputs and shipped
# assets can be checked for numbers that hold only on the machine that made them.
#
#   tools/other_cpu.sh .venv/bin/python -m pytest --nbval ... notebooks/en/12-learner.ipynb
#
# Each knob swaps in other kernels, which round differently in the last bits:
# - OpenBLAS (NumPy's matmul/dot): Prescott's SSE3 kernels instead of Haswell/Zen's;
# - NumPy's own loops (exp, log, tanh, ...): every SIMD target it dispatches to
#   (AVX2 and AVX-512 on x86) switched off, leaving its baseline loops;
# - PyTorch (the oracle, chapter 20's assets): ATen's scalar kernels instead of
#   AVX2, and MKL's vendor-neutral matmul path (MKL takes other paths on Intel);
# - one thread for OpenMP, OpenBLAS and Taichi, so reductions split differently.
# Taichi's LLVM code is still compiled for this CPU; nothing here emulates that.
# Every knob can be set from outside for another mix, e.g.
#   OPENBLAS_CORETYPE=Sandybridge OMP_NUM_THREADS=4 tools/other_cpu.sh ...
set -euo pipefail
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Prescott}"
export NPY_DISABLE_CPU_FEATURES="${NPY_DISABLE_CPU_FEATURES:-X86_V3 X86_V4 AVX512_ICL AVX512_SPR}"
export ATEN_CPU_CAPABILITY="${ATEN_CPU_CAPABILITY:-default}"
export MKL_CBWR="${MKL_CBWR:-COMPATIBLE}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
export TI_CPU_MAX_NUM_THREADS="${TI_CPU_MAX_NUM_THREADS:-1}"
exec "$@"
