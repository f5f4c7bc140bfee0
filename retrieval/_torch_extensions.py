"""ColBERT's C++ extensions: a lock left by a killed build never hangs a search, and a build says what it does.

colbert-ai compiles small C++ extensions on first use with ``torch.utils.cpp_extension.load``, each in its
own folder ``<root>/<name>/``. PyTorch guards a build with an empty ``lock`` file in that folder
(``torch.utils.file_baton.FileBaton``): the process that creates it builds, every other one waits for it
to disappear, with no time limit and no check that its owner is alive. A process killed during the build
leaves the lock behind, and every later first search waits forever, printing nothing.

Before ColBERT loads an extension, :func:`check_build_lock` looks at that folder's lock. The rule:

* a lock is **live** while a process on this machine holds it open or works in the folder (read from
  ``/proc``: the builder keeps the lock's file descriptor open, ninja and the compiler run inside the
  folder), or while anything in the folder was written less than ``stale_after_s`` ago (the only sign
  of a build on another machine sharing the folder, or by a user whose processes cannot be read);
* otherwise it is **stale**: one line naming the folder is printed, and the lock is removed, so the
  build starts again;
* a live lock is waited for, with a message and a line every ``report_every_s``, up to ``wait_s``,
  and looked at again each ``poll_s``: when the processes seen holding it have all exited and the lock is
  still there, their build died (a killed job's compiler, in its own process group under ninja, may
  outlive the job and finish first), so the lock is stale at once; after ``wait_s``
  :class:`ExtensionBuildBusy` says what holds it and how to wait longer.

Both bounds come from the environment: :data:`WAIT_ENV` and :data:`STALE_AFTER_ENV` (seconds).

The root is resolved as PyTorch resolves it (``torch/utils/cpp_extension.py``, ``_get_build_directory``):
``$TORCH_EXTENSIONS_DIR`` as given, else ``get_default_build_root()`` (public) joined with
``py<major><minor><abiflags>_<rocmXY|cuXY|cpu>``, written here with public names only.

:func:`guard_colbert_loads` wraps the ``load`` that colbert's modules imported from
``torch.utils.cpp_extension``, so that each load checks its folder first and a compile prints plain
progress lines (stderr, no ANSI: readable when piped and in CI logs).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lfrqa.errors import RagQaArenaError

__all__ = [
    "STALE_AFTER_ENV", "WAIT_ENV", "BuildLockPolicy", "ExtensionBuildBusy", "check_build_lock", "check_build_locks",
    "colbert_extension_names", "extension_folder", "extensions_root", "guard_colbert_loads", "inspect_build_lock",
]

WAIT_ENV = "RAG_QA_ARENA_EXTENSION_WAIT"
STALE_AFTER_ENV = "RAG_QA_ARENA_EXTENSION_STALE_AFTER"
LOCK_NAME = "lock"  # torch: FileBaton(os.path.join(build_directory, 'lock'))
# colbert-ai 0.2.22: the extensions a search or an index build on CPU loads, and those on a GPU.
CPU_EXTENSIONS = ("segmented_maxsim_cpp", "segmented_lookup_cpp", "filter_pids_cpp", "decompress_residuals_cpp")
GPU_EXTENSIONS = ("decompress_residuals_cpp", "packbits_cpp")
# colbert modules that bind ``load`` by name (``from torch.utils.cpp_extension import load``).
LOADER_MODULES = (
    "colbert.modeling.colbert",
    "colbert.search.strided_tensor",
    "colbert.search.index_storage",
    "colbert.indexing.codecs.residual",
)
_MARK = "_rag_qa_arena_lock_check"
_PREFIX = "rag-qa-arena: "


class ExtensionBuildBusy(RagQaArenaError):
    """A C++ extension build of another process still holds its folder after the allowed wait."""


@dataclass(frozen=True)
class BuildLockPolicy:
    """How a build lock is judged and waited for (seconds).

    Args:
        wait_s: how long to wait for a live build before giving up (default 1800; :data:`WAIT_ENV`).
        stale_after_s: a lock no local process holds is stale once nothing in its folder was written
            for this long (default 300; :data:`STALE_AFTER_ENV`). Keep it above the longest single compile
            step of a build that may run on another machine sharing the folder.
        poll_s: how often the lock is looked at again while waiting.
        report_every_s: a progress line this often, while waiting or compiling.
    """

    wait_s: float = 1800.0
    stale_after_s: float = 300.0
    poll_s: float = 1.0
    report_every_s: float = 30.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> BuildLockPolicy:
        """The defaults, with :data:`WAIT_ENV` and :data:`STALE_AFTER_ENV` read from ``environ`` (``os.environ``)."""
        environ = os.environ if environ is None else environ
        return cls(wait_s=_seconds(environ, WAIT_ENV, cls.wait_s),
                   stale_after_s=_seconds(environ, STALE_AFTER_ENV, cls.stale_after_s))


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise RagQaArenaError(f"{name}={text!r} is not a number of seconds: set it to e.g. {int(default)}, or unset it")
    return value


@dataclass(frozen=True)
class LockState:
    """What a build folder's lock looks like now."""

    folder: Path
    holders: tuple[int, ...]  # processes on this machine holding the lock open or working in the folder
    idle_s: float  # seconds since anything in the folder was written
    inode: int

    def live(self, policy: BuildLockPolicy) -> bool:
        return bool(self.holders) or self.idle_s < policy.stale_after_s

    def why(self) -> str:
        if self.holders:
            return "held by pid " + ", ".join(str(p) for p in self.holders[:5])
        return f"no process here holds it; last write {_duration(self.idle_s)} ago"


def extensions_root(environ: Mapping[str, str] | None = None) -> Path:
    """The folder under which ``torch.utils.cpp_extension.load`` builds extensions, as torch resolves it."""
    environ = os.environ if environ is None else environ
    given = environ.get("TORCH_EXTENSIONS_DIR")
    if given is not None:
        return Path(given)
    import torch
    from torch.utils.cpp_extension import get_default_build_root

    if torch.version.hip is not None:
        accelerator = "rocm" + torch.version.hip.replace(".", "")
    elif torch.version.cuda is not None:
        accelerator = "cu" + torch.version.cuda.replace(".", "")
    else:
        accelerator = "cpu"
    python = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
    return Path(get_default_build_root()) / f"{python}_{accelerator}"


def extension_folder(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """The build folder of extension ``name`` (torch: ``<root>/<name>``, whatever version it builds)."""
    return extensions_root(environ) / name


def colbert_extension_names(*, use_gpu: bool) -> tuple[str, ...]:
    """The extensions colbert-ai loads: on a GPU only the CUDA ones, on CPU the four C++ ones."""
    return GPU_EXTENSIONS if use_gpu else CPU_EXTENSIONS


def inspect_build_lock(folder: str | os.PathLike, *, now: float | None = None) -> LockState | None:
    """The state of ``folder``'s build lock, or None when there is none."""
    folder = Path(folder)
    lock = folder / LOCK_NAME
    try:
        inode = lock.stat().st_ino
    except FileNotFoundError:
        return None
    newest = 0.0
    with contextlib.suppress(OSError):
        newest = folder.stat().st_mtime
        with os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    idle = (time.time() if now is None else now) - newest
    return LockState(folder=folder, holders=_local_holders(folder, lock), idle_s=idle, inode=inode)


def _local_holders(folder: Path, lock: Path) -> tuple[int, ...]:
    """Processes on this machine whose open files include ``lock`` or whose working folder is inside
    ``folder`` (Linux ``/proc``; processes this user may not read are not seen)."""
    if not os.path.isdir("/proc/self/fd"):
        return ()
    real_folder = os.path.realpath(folder)
    real_lock = os.path.join(real_folder, LOCK_NAME)
    inside = real_folder.rstrip(os.sep) + os.sep
    holders = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
            if cwd == real_folder or cwd.startswith(inside):
                holders.append(int(entry.name))
                continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{entry.name}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry.name}/fd/{fd}") == real_lock:
                        holders.append(int(entry.name))
                        break
    return tuple(holders)


def check_build_lock(
    folder: str | os.PathLike,
    *,
    policy: BuildLockPolicy | None = None,
    say: Callable[[str], None] | None = None,
) -> str:
    """Make ``folder``'s build lock harmless before torch looks at it.

    Returns ``"free"`` (no lock), ``"removed"`` (a stale lock, reported in one line and removed) or
    ``"released"`` (a live build finished while we waited). Raises :class:`ExtensionBuildBusy` when a
    live build still holds the lock after ``policy.wait_s``. ``say`` prints a line (default: stderr).
    """
    policy = policy or BuildLockPolicy.from_env()
    say = say or _say
    folder = Path(folder)
    state = inspect_build_lock(folder)
    if state is None:
        return "free"
    start = time.monotonic()
    waited = False
    seen: set[int] = set()  # processes seen holding the lock
    next_report = start + policy.report_every_s
    while state is not None and state.live(policy) and not (seen and not state.holders and not _any_alive(seen)):
        seen.update(state.holders)
        elapsed = time.monotonic() - start
        if elapsed >= policy.wait_s:
            raise ExtensionBuildBusy(
                f"The C++ extension build in {folder} is still running after {_duration(elapsed)} "
                f"({state.why()}): let it finish, or stop it and run again; to wait longer set "
                f"{WAIT_ENV}=SECONDS (now {policy.wait_s:g})"
            )
        if not waited:
            say(f"waiting up to {_duration(policy.wait_s)} ({WAIT_ENV}) for the C++ extension build "
                f"running in {folder} ({state.why()})")
            waited = True
        elif time.monotonic() >= next_report:
            say(f"still waiting for the C++ extension build in {folder} ({_duration(elapsed)}; {state.why()})")
            next_report += policy.report_every_s
        time.sleep(policy.poll_s)
        state = inspect_build_lock(folder)
    if state is None:
        return "released"
    remove_lock_if_same(folder / LOCK_NAME, state.inode)
    why = ("its build's processes here ended without releasing it" if seen else
           f"no process holds it, nothing written for {_duration(state.idle_s)}; rule: "
           f"{STALE_AFTER_ENV}={policy.stale_after_s:g} s")
    say(f"removed a stale lock of a killed C++ extension build ({why}): {folder}")
    return "removed"


def _any_alive(pids: Iterable[int]) -> bool:
    """Whether any of ``pids`` still runs (a zombie does not: it waits only to be reaped)."""
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
                if handle.read().rpartition(")")[2].split()[:1] not in (["Z"], ["X"]):
                    return True
        except OSError:
            continue
    return False


def remove_lock_if_same(lock: Path, inode: int) -> None:
    """Remove ``lock`` unless it was replaced meanwhile (a new build's lock is another file)."""
    with contextlib.suppress(FileNotFoundError):
        if lock.stat().st_ino == inode:
            lock.unlink()


def check_build_locks(
    names: Iterable[str], *, policy: BuildLockPolicy | None = None, say: Callable[[str], None] | None = None
) -> dict[str, str]:
    """:func:`check_build_lock` for the folders of the extensions ``names``: ``{name: outcome}``."""
    policy = policy or BuildLockPolicy.from_env()
    return {name: check_build_lock(extension_folder(name), policy=policy, say=say) for name in names}


def guard_colbert_loads() -> None:
    """Wrap (once) the ``load`` of colbert's modules: check the folder's lock, then load with progress."""
    for module_name in LOADER_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # moved in some release: nothing to wrap there
            continue
        load = getattr(module, "load", None)
        if load is not None and not getattr(load, _MARK, False):
            module.load = _guarded(load)


def _guarded(load):
    @functools.wraps(load)
    def guarded_load(name, *args, **kwargs):
        folder = Path(kwargs["build_directory"]) if kwargs.get("build_directory") else extension_folder(name)
        policy = BuildLockPolicy.from_env()
        check_build_lock(folder, policy=policy)
        with _progress(name, folder, policy):
            return load(name, *args, **kwargs)

    setattr(guarded_load, _MARK, True)
    return guarded_load


@contextlib.contextmanager
def _progress(name: str, folder: Path, policy: BuildLockPolicy):
    """Plain lines around a compile (only when the folder holds no built library yet), and one line
    every ``report_every_s`` while the load lasts."""
    compiling = not any(folder.glob("*.so")) and not any(folder.glob("*.pyd"))
    verb = "compiling" if compiling else "loading"
    if compiling:
        _say(f"compiling ColBERT's C++ extension {name} (first use, about a minute on CPU) in {folder}")
    start = time.monotonic()
    stop = threading.Event()

    def report():
        while not stop.wait(policy.report_every_s):
            _say(f"still {verb} {name} ({_duration(time.monotonic() - start)})")

    reporter = threading.Thread(target=report, name=f"progress-{name}", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        stop.set()
        reporter.join()
    if compiling:
        _say(f"compiled {name} in {_duration(time.monotonic() - start)}")


def _say(line: str) -> None:
    print(_PREFIX + line, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
