"""Let ``colbert-ai`` (<= 0.2.22) build its models under ``transformers`` 5.

Why: transformers 5 expects every model's ``__init__`` to end with ``self.post_init()``, which records
per-instance facts such as ``all_tied_weights_keys`` that ``init_weights()`` and ``from_pretrained()``
then read. colbert-ai's ``HF_ColBERT`` ends its ``__init__`` with ``self.init_weights()`` instead (the
transformers 4 idiom), so building or loading any ColBERT model fails with
``'HF_ColBERT' object has no attribute 'all_tied_weights_keys'``.

``HF_ColBERT`` is not a fixed class: ``colbert.modeling.hf_colbert.class_factory(name_or_path)``
creates it afresh, for the base model of each checkpoint, and ``colbert.modeling.base_colbert`` (which
builds the models) holds its own reference to that function. So :func:`apply` wraps ``class_factory``
in every colbert module that imported it, and adjusts each class the factory returns:

* its ``__init__`` runs colbert's own ``__init__`` and then ``post_init()``, as transformers 5 expects;
* colbert's early ``init_weights()`` call inside ``__init__`` is deferred to that ``post_init()``
  (which runs ``init_weights()`` itself once the model knows its tied weights), so weights are
  initialised once, at the point transformers 5 chooses; ``from_pretrained`` then loads the saved
  weights over them as usual.

Applied lazily, the first time ColBERT is used (``retrieval._colbert._import_colbert``), never at package
import; only for colbert-ai versions known to need it (:data:`FIXED_UP_TO`) and only with
transformers >= 5; calling :func:`apply` again does nothing.
"""

from __future__ import annotations

import functools
import importlib
from importlib import metadata

# The newest colbert-ai release known to lack post_init() (checked: 0.2.22). A newer release is left alone.
FIXED_UP_TO = "0.2.22"
# Modules that bind ``class_factory`` by name (``from colbert.modeling.hf_colbert import class_factory``).
_MODULES = (
    "colbert.modeling.hf_colbert",
    "colbert.modeling.base_colbert",
    "colbert.modeling.tokenization.query_tokenization",
    "colbert.modeling.tokenization.doc_tokenization",
)
_MARK = "_rag_qa_arena_post_init_fix"


def needed() -> bool:
    """True when the installed colbert-ai and transformers are the pair this fix is for."""
    from packaging.version import Version

    try:
        colbert_version = Version(metadata.version("colbert-ai"))
        transformers_version = Version(metadata.version("transformers"))
    except metadata.PackageNotFoundError:
        return False
    return colbert_version <= Version(FIXED_UP_TO) and transformers_version.major >= 5


def apply() -> bool:
    """Wrap colbert's ``class_factory`` (once) when :func:`needed`; returns whether the fix is active."""
    if not needed():
        return False
    wrappers = {}  # one wrapper per original function, shared by the modules that imported it
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # a module moved in some release: nothing of it to fix
            continue
        factory = getattr(module, "class_factory", None)
        if factory is not None and not getattr(factory, _MARK, False):
            if factory not in wrappers:
                wrappers[factory] = _wrap_factory(factory)
            module.class_factory = wrappers[factory]
    return True


def _wrap_factory(factory):
    @functools.wraps(factory)
    def class_factory(*args, **kwargs):
        return fix_class(factory(*args, **kwargs))

    setattr(class_factory, _MARK, True)
    return class_factory


def fix_class(cls: type) -> type:
    """Make ``cls`` (an ``HF_ColBERT`` class) end its ``__init__`` with ``post_init()``; in place, once."""
    if cls.__dict__.get(_MARK):
        return cls
    original_init = cls.__init__

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.post_init()  # records all_tied_weights_keys & co., then runs init_weights()

    def init_weights(self):
        # post_init() stores all_tied_weights_keys on the instance before it calls init_weights();
        # until then this is colbert's own call from __init__, which post_init() will repeat.
        if "all_tied_weights_keys" in self.__dict__:
            super(cls, self).init_weights()

    cls.__init__ = __init__
    cls.init_weights = init_weights
    setattr(cls, _MARK, True)
    return cls


#: Modules that bind ColBERT's ``get_metadata_only`` by name (it stamps each config it saves with the git branch
#: of the current folder's repository).
_METADATA_MODULES = ("utility.utils.save_metadata", "colbert.infra.config.base_config", "colbert.data.examples",
                     "colbert.data.ranking")


def tolerate_detached_head() -> None:
    """Let ColBERT save its configs from a git checkout on a detached HEAD (CI checkouts, ``git checkout
    <commit>``, worktrees): its ``get_metadata_only`` asks GitPython for the *current folder's* branch and
    raises ``TypeError: HEAD is a detached symbolic reference``, which stops every index build and search
    there. The wrapper gives ColBERT's own metadata when it can and, when git cannot name a branch, the same
    record without the git fields (as ColBERT writes outside a repository). Once; colbert-ai <= FIXED_UP_TO."""
    from packaging.version import Version

    try:
        if Version(metadata.version("colbert-ai")) > Version(FIXED_UP_TO):
            return
        stamp = importlib.import_module(_METADATA_MODULES[0])
    except (ImportError, metadata.PackageNotFoundError):
        return
    original = stamp.get_metadata_only
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def get_metadata_only():
        try:
            return original()
        except (TypeError, ValueError, OSError):  # no branch to name (detached HEAD), or git itself failing
            import socket
            import sys
            import time

            from colbert.utils.utils import dotdict

            return dotdict(hostname=socket.gethostname(), current_datetime=time.strftime("%b %d, %Y ; %l:%M%p %Z (%z)"),
                           cmd=" ".join(sys.argv))

    setattr(get_metadata_only, _MARK, True)
    for name in _METADATA_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "get_metadata_only", None) is original:
            module.get_metadata_only = get_metadata_only
