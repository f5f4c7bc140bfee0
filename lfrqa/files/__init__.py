"""The old name of :mod:`lfrqa.kernel`, kept for one release: every name read here warns
``DeprecationWarning`` ("lfrqa.files is now lfrqa.kernel") and is the kernel's own object."""

from __future__ import annotations

import warnings

import lfrqa.kernel as _kernel

__all__ = list(_kernel.__all__)


def __getattr__(name: str):
    if name not in _kernel.__all__:
        raise AttributeError(f"module 'lfrqa.files' has no attribute {name!r} (lfrqa.files is now lfrqa.kernel)")
    warnings.warn(f"lfrqa.files is now lfrqa.kernel: import {name} from lfrqa.kernel", DeprecationWarning, stacklevel=2)
    return getattr(_kernel, name)
