"""Old private addresses of public names, kept working for one release.

A private module lists what moved in a ``_MOVED`` table and answers for it
from its module ``__getattr__`` (PEP 562) through ``moved``: the name still
imports, with a ``DeprecationWarning`` that names the public replacement.
The core itself never imports a moved name from its old address.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["moved"]


def moved(module: str, name: str, replacement: str, value: Any) -> Any:
    """Warn that ``module.name`` is now ``replacement``, and return ``value``."""
    warnings.warn(f"{module}.{name} is private and will be removed in the next release; "
                  f"import {replacement} instead", DeprecationWarning, stacklevel=3)
    return value
