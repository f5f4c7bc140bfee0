r"""Where outputs go: folders made (a file in the way named in one line), atomic writes, exclusive
locks on an output, the refusal of an output that would replace an input, and the identity of a
live process (to tell a crashed writer's leftovers from a running one).

One implementation of each, shared by the whole package; :mod:`lfrqa.kernel` exports every name
(this module imports nothing of ours but the errors).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lfrqa.errors import RagQaArenaError

__all__ = [
    "RunLocked",
    "atomic_write",
    "cut_torn_tail",
    "exclusive_lock",
    "file_in_the_way",
    "in_the_way_message",
    "make_folder",
    "process_identity",
    "refuse_output_over_input",
    "write_error",
]


def write_error(error: OSError, path: str | os.PathLike) -> OSError:
    """``error`` again, naming ``path`` and the likely cause."""
    return OSError(error.errno, f"{error.strerror or error} (disk full or read-only?)", str(path))


def file_in_the_way(path: str | os.PathLike) -> Path | None:
    """The first of ``path``'s parents (from the root down), or ``path`` itself, that exists and is not a
    folder (a file, a link to nothing): what stops a folder being made there; else None."""
    path = Path(path)
    return next((p for p in [*reversed(path.parents), path] if os.path.lexists(p) and not p.is_dir()), None)


def in_the_way_message(target: str | os.PathLike, blocker: Path) -> str:
    """``"cannot write to TARGET: BLOCKER is a file, not a folder (…)"``: the one line for an output under a file."""
    kind = "a file" if blocker.is_file() else "a link to nothing" if blocker.is_symlink() else "something else"
    return (f"cannot write to {target}: {'it' if Path(target) == blocker else blocker} is {kind}, not a folder "
            "(move it away or choose another path)")


def make_folder(folder: str | os.PathLike, *, target: str | os.PathLike | None = None) -> Path:
    """Create ``folder`` and its missing parents, the one way every output folder is made. A file where it
    or a parent should be is a :class:`RagQaArenaError` (:func:`in_the_way_message`; ``target``: the output
    being written, default ``folder``); other errors (read-only, full disk) propagate as ``OSError``.

    >>> import tempfile
    >>> afile = Path(tempfile.mkdtemp()) / "afile"
    >>> _ = afile.write_text("x")
    >>> make_folder(afile, target=afile / "b.jsonl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    lfrqa.RagQaArenaError: cannot write to .../afile/b.jsonl: .../afile is a file, not a folder (...)
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = file_in_the_way(folder)
        if blocker is None:
            raise
        raise RagQaArenaError(in_the_way_message(folder if target is None else target, blocker)) from None
    return folder


def atomic_write(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` all at once: a temporary file beside it, fsync, then rename.

    Readers see the old file or the new one, never a part; a crash leaves the old file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise write_error(error, path) from None


class RunLocked(RagQaArenaError):
    """Another process holds the lock of an output (a run folder, an answer file)."""


@contextlib.contextmanager
def exclusive_lock(lock_path: str | os.PathLike, *, busy: str):
    """Hold an exclusive lock on ``lock_path`` for the ``with`` block (``filelock``: ``flock`` on
    Unix, ``msvcrt`` on Windows), so two processes never write one output; a second one gets
    :class:`RunLocked` with ``busy`` as its message, at once (no waiting). The lock file stays
    (removing it would let a third process lock a new file while a second still holds the old
    one); the operating system releases the lock when the process ends, even on ``kill -9``.
    """
    from filelock import FileLock, Timeout

    lock_path = Path(lock_path)
    lock = FileLock(lock_path, timeout=0, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise RunLocked(busy) from None
    except OSError as error:
        raise write_error(error, lock_path) from None
    try:
        yield
    finally:
        lock.release()


def _real(path: str | os.PathLike) -> Path:
    return Path(os.path.realpath(os.path.abspath(os.fspath(path))))


def refuse_output_over_input(output: tuple[str, str | os.PathLike | None], inputs, *,
                             written: tuple[str, ...] | None = ()) -> None:
    """Refuse an output that would replace an input, with or without ``--overwrite``.

    ``output``: ``(flag, path)``; ``inputs``: ``(flag, path)`` pairs (None paths are skipped).
    ``written``: for a folder output, the names of the files written in it (an input equal to one
    of them, or the folder itself, is refused); None: the whole folder is the output (an input
    anywhere inside it is refused); ``()`` (default): the output is a file. Paths are compared after
    resolving links, and by inode where both exist (a hard link is the same file).
    """
    flag, out = output
    if out is None:
        return
    root = _real(out)
    targets = [root] + [_real(root / name) for name in written or ()]
    for in_flag, path in inputs:
        if path is None:
            continue
        source = _real(path)
        clash = source in targets or (written is None and root in source.parents)
        if not clash:
            for target in targets:
                with contextlib.suppress(OSError):
                    if os.path.samefile(source, target):
                        clash = True
                        break
        if clash:
            raise RagQaArenaError(
                f"{flag} {out} would write over the input {in_flag} {path}: an output never replaces an input, "
                f"even with --overwrite. Choose another {flag}")


def process_identity(pid: int) -> str | None:
    """``"<boot id>-<start time>"`` of the live process ``pid`` (Linux ``/proc``): a pid reused by
    another process, or after a restart, has another; None when the process is gone or a zombie
    (killed, not yet reaped), and ``""`` where ``/proc`` cannot tell (other systems)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else ""
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state is field 3, starttime field 22
    if len(fields) < 20:
        return ""
    if fields[0] in ("Z", "X", "x"):
        return None
    return f"{_boot_id()}-{fields[19]}"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()[:8]
    except OSError:
        return "boot"


def cut_torn_tail(path: str | os.PathLike) -> None:
    """Cut a last line left half-written by a crash (nothing when the file ends with a newline or is missing),
    so that lines appended after it start on a line of their own and a reader sees complete lines only."""
    if not path.is_file():
        return
    with open(path, "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        chunk = 1 << 16
        end = size
        while end > 0:
            start = max(0, end - chunk)
            handle.seek(start)
            block = handle.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                handle.truncate(start + cut + 1)
                return
            end = start
        handle.truncate(0)
