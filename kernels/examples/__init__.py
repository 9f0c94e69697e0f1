"""Example user kernels for `burnbook.autodiff.taichi_op` (the Custom Taichi
Kernel chapter, notebooks/en/22-custom-taichi-kernel.ipynb). Device code only: each module holds `@ti.kernel`s and the
plain-Python helpers that describe them; the ops are put together by the code
that uses them (the chapter, the tests), as a user's project would.

- fused_matmul_add_relu.py  the book's fused matmul + add + relu, a version
                            whose `kernel.grad` is right, and one that breaks
                            Taichi's autodiff rules and silently is not
"""
