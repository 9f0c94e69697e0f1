"""The passes: rewrites of a parsed `Graph` before it is lowered.

- `fold`: constant folding at import (exporters' shape arithmetic on fixed
  dims becomes constants), and the re-export advice in refusals;
- `fuse`: pattern fusion at import (exporters' multi-node GELU formulas
  become one `Gelu` node).
"""

from .fold import fold_model
from .fuse import fuse_patterns

__all__ = ["fold_model", "fuse_patterns"]
