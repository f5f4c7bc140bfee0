"""Public names that print their public path: ``metric_arena.RetryPolicy``, not the private module it lives in.

>>> import metric_arena
>>> metric_arena.RetryPolicy.__module__
'metric_arena'
"""

from __future__ import annotations

__all__ = ["export_names"]


def export_names(namespace: dict) -> None:
    """Set ``__module__`` of every class and function listed in ``namespace["__all__"]`` to the
    package that exports it (call it at the end of a package's ``__init__``: ``export_names(globals())``).
    A name exported again by an outer package of the same top-level package takes the outer one's path."""
    package = namespace["__name__"]
    top = package.split(".")[0]
    for name in namespace["__all__"]:
        value = namespace.get(name)
        home = getattr(value, "__module__", None) or ""
        if home.split(".")[0] != top:
            continue  # another package's name (lfrqa's errors in metric_arena, say): its own path stays
        if isinstance(value, type) or (callable(value) and hasattr(value, "__code__")):
            try:
                value.__module__ = package
            except (AttributeError, TypeError):  # a built-in type: its own path stays
                pass
