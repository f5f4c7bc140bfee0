"""A lock left by a killed C++ extension build (retrieval/_torch_extensions.py), made directly: stale
locks are reported in one line and removed, live builds (real subprocesses) are waited for, up to a bound.
Real ColBERT builds, killed and resumed, are in tests/test_colbert_extension_locks.py (slow)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import pytest

from lfrqa.errors import RagQaArenaError
from retrieval import _torch_extensions as ext

QUICK = ext.BuildLockPolicy(wait_s=60, stale_after_s=30, poll_s=0.05, report_every_s=0.2)


def stale_folder(root: Path, name: str = "segmented_lookup_cpp", age_s: float = 3600) -> Path:
    """A build folder as a build killed ``age_s`` ago leaves it: the lock, build.ninja, no library."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "lock").touch()
    (folder / "build.ninja").write_text("rule cxx\n", encoding="utf-8")
    old = time.time() - age_s
    for path in (folder / "lock", folder / "build.ninja", folder):
        os.utime(path, (old, old))
    return folder


def start(code: str, cwd: Path | None = None) -> subprocess.Popen:
    """A real process running ``code``; it prints "ready" once it holds what it should."""
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


def holder(lock: Path) -> subprocess.Popen:
    """A process that holds ``lock`` open as torch's FileBaton does while it builds (O_CREAT | O_EXCL)."""
    return start(f"""
        import os, sys, time
        fd = os.open({str(lock)!r}, os.O_CREAT | os.O_EXCL)
        print("ready", flush=True)
        time.sleep(600)
    """)


def stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()


def test_the_root_is_the_one_torch_builds_in(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "given"))
    assert ext.extensions_root() == tmp_path / "given"
    assert ext.extension_folder("filter_pids_cpp") == tmp_path / "given" / "filter_pids_cpp"
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    import torch.utils.cpp_extension as cpp_extension

    # torch's own (private) resolution, read here only to check ours against it
    torch_folder = getattr(cpp_extension, "_get_build_directory")("filter_pids_cpp", False)
    assert ext.extension_folder("filter_pids_cpp") == Path(torch_folder)
    assert ext.extensions_root().name.endswith("_cpu") or "_cu" in ext.extensions_root().name


def test_no_lock_is_free(tmp_path):
    (tmp_path / "filter_pids_cpp").mkdir()
    assert ext.check_build_lock(tmp_path / "filter_pids_cpp", policy=QUICK, say=pytest.fail) == "free"
    assert ext.check_build_lock(tmp_path / "never-built", policy=QUICK, say=pytest.fail) == "free"


def test_a_stale_lock_is_reported_in_one_line_and_removed(tmp_path):
    folder = stale_folder(tmp_path)
    lines = []
    assert ext.check_build_lock(folder, policy=QUICK, say=lines.append) == "removed"
    assert not (folder / "lock").exists()
    assert (folder / "build.ninja").exists()  # only the lock goes: ninja decides what to rebuild
    assert len(lines) == 1 and str(folder) in lines[0] and "stale" in lines[0] and "60 min" in lines[0]
    assert ext.check_build_lock(folder, policy=QUICK, say=pytest.fail) == "free"


def test_the_stale_rule_is_the_age_of_the_newest_write(tmp_path):
    folder = stale_folder(tmp_path, age_s=100)
    state = ext.inspect_build_lock(folder)
    assert state.holders == () and 99 < state.idle_s < 1000
    assert not state.live(ext.BuildLockPolicy(stale_after_s=60)) and state.live(ext.BuildLockPolicy(stale_after_s=600))
    (folder / "main.o").write_bytes(b"\0")  # the build wrote something just now
    assert ext.inspect_build_lock(folder).live(ext.BuildLockPolicy(stale_after_s=60))


def test_a_build_held_by_a_live_process_is_waited_for_then_an_error_names_it(tmp_path):
    folder = stale_folder(tmp_path, age_s=3600)
    (folder / "lock").unlink()
    process = holder(folder / "lock")
    try:
        old = time.time() - 3600
        for path in (folder / "lock", folder):
            os.utime(path, (old, old))  # old files, but a live holder: not stale
        assert ext.inspect_build_lock(folder).idle_s > 3000
        state = ext.inspect_build_lock(folder)
        assert process.pid in state.holders and state.live(QUICK)
        lines = []
        with pytest.raises(ext.ExtensionBuildBusy) as caught:
            ext.check_build_lock(folder, policy=ext.BuildLockPolicy(wait_s=0.5, poll_s=0.05, report_every_s=0.2),
                                 say=lines.append)
        message = str(caught.value)
        assert str(folder) in message and f"pid {process.pid}" in message and ext.WAIT_ENV in message
        assert "\n" not in message and isinstance(caught.value, RagQaArenaError)  # the CLI prints it as one line
        assert lines[0].startswith("waiting up to") and str(folder) in lines[0]
        assert any(line.startswith("still waiting") for line in lines[1:])
        assert (folder / "lock").exists()  # a live build's lock is never removed
    finally:
        stop(process)


def test_a_process_working_in_the_folder_counts_as_a_live_build(tmp_path):
    """ninja and the compiler run inside the build folder (and outlive a killed Python parent)."""
    folder = stale_folder(tmp_path)
    process = start('print("ready", flush=True); import time; time.sleep(600)', cwd=folder)
    try:
        assert process.pid in ext.inspect_build_lock(folder).holders
    finally:
        stop(process)
    assert ext.inspect_build_lock(folder).holders == ()


def test_a_builder_killed_while_we_wait_leaves_a_stale_lock_that_is_removed(tmp_path):
    folder = tmp_path / "segmented_maxsim_cpp"
    folder.mkdir()
    process = holder(folder / "lock")
    old = time.time() - 3600
    os.utime(folder / "lock", (old, old))
    os.utime(folder, (old, old))
    threading.Timer(0.5, lambda: os.kill(process.pid, signal.SIGKILL)).start()
    lines = []
    try:
        assert ext.check_build_lock(folder, policy=QUICK, say=lines.append) == "removed"
    finally:
        stop(process)
    assert not (folder / "lock").exists()
    assert lines[0].startswith("waiting") and lines[-1].startswith("removed a stale lock")


def test_a_lock_whose_holders_all_ended_is_stale_at_once(tmp_path):
    """Fresh files, but the processes seen building ended without releasing the lock: their build died."""
    folder = tmp_path / "segmented_lookup_cpp"
    folder.mkdir()
    process = holder(folder / "lock")
    threading.Timer(0.5, lambda: os.kill(process.pid, signal.SIGKILL)).start()
    lines = []
    try:
        policy = ext.BuildLockPolicy(wait_s=600, stale_after_s=600, poll_s=0.05)
        assert ext.check_build_lock(folder, policy=policy, say=lines.append) == "removed"
    finally:
        stop(process)
    assert not (folder / "lock").exists() and "ended without releasing it" in lines[-1]


def test_a_build_that_finishes_while_we_wait_releases_the_lock(tmp_path):
    folder = tmp_path / "filter_pids_cpp"
    folder.mkdir()
    process = start(f"""
        import os, time
        lock = {str(folder / "lock")!r}
        fd = os.open(lock, os.O_CREAT | os.O_EXCL)
        print("ready", flush=True)
        time.sleep(0.5)
        open(lock[:-4] + "filter_pids_cpp.so", "wb").close()
        os.close(fd)  # torch's FileBaton.release: the file closed first, removed next
        time.sleep(0.3)
        os.remove(lock)
    """)
    try:
        assert ext.check_build_lock(folder, policy=QUICK, say=lambda line: None) == "released"
    finally:
        stop(process)


def test_recent_writes_without_a_visible_holder_are_a_build_elsewhere(tmp_path):
    """Another machine sharing the folder: only its writes show. Waited for; stale once they stop."""
    folder = stale_folder(tmp_path)
    writer = start(f"""
        import time, pathlib
        pathlib.Path({str(folder / "main.o")!r}).write_bytes(b"0")
        print("ready", flush=True)
        while True:
            time.sleep(0.05)
            pathlib.Path({str(folder / "main.o")!r}).write_bytes(b"0")
    """, cwd=tmp_path)
    try:
        policy = ext.BuildLockPolicy(wait_s=0.5, stale_after_s=30, poll_s=0.05)
        with pytest.raises(ext.ExtensionBuildBusy, match="no process here holds it; last write"):
            ext.check_build_lock(folder, policy=policy, say=lambda line: None)
    finally:
        stop(writer)
    lines = []
    policy = ext.BuildLockPolicy(wait_s=60, stale_after_s=0.3, poll_s=0.05)
    assert ext.check_build_lock(folder, policy=policy, say=lines.append) == "removed"
    assert lines[-1].startswith("removed a stale lock") and lines[-1].endswith(str(folder))


def test_a_lock_replaced_by_a_new_build_is_not_removed(tmp_path):
    folder = stale_folder(tmp_path)
    state = ext.inspect_build_lock(folder)
    (folder / "lock.new").touch()  # another process removed it and its new build took the lock: another file
    os.replace(folder / "lock.new", folder / "lock")
    assert (folder / "lock").stat().st_ino != state.inode
    ext.remove_lock_if_same(folder / "lock", state.inode)
    assert (folder / "lock").exists()


def test_the_bounds_come_from_the_environment():
    policy = ext.BuildLockPolicy.from_env({ext.WAIT_ENV: "12.5", ext.STALE_AFTER_ENV: "40"})
    assert (policy.wait_s, policy.stale_after_s) == (12.5, 40.0)
    assert ext.BuildLockPolicy.from_env({}) == ext.BuildLockPolicy()
    for bad in ("soon", "-1", "nan", "inf"):
        with pytest.raises(RagQaArenaError, match=f"{ext.WAIT_ENV}='{bad}' is not a number of seconds"):
            ext.BuildLockPolicy.from_env({ext.WAIT_ENV: bad})


def test_colbert_loads_check_their_folder_and_say_they_compile(tmp_path, monkeypatch, capsys):
    """The wrapped ``load`` of colbert's modules (stand-ins here): the stale lock goes first, then plain
    progress lines (no ANSI) around the compile."""
    loads = []

    def fake_load(name, sources, extra_cflags=None, verbose=False):
        assert not (tmp_path / name / "lock").exists()  # checked before torch would look at it
        time.sleep(0.3)
        loads.append(name)
        return types.SimpleNamespace(name=name)

    for module_name in ext.LOADER_MODULES:
        monkeypatch.setitem(sys.modules, module_name, types.SimpleNamespace(load=fake_load))
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    quick = ext.BuildLockPolicy(stale_after_s=60, report_every_s=0.1)
    monkeypatch.setattr(ext.BuildLockPolicy, "from_env", classmethod(lambda cls, environ=None: quick))
    folder = stale_folder(tmp_path, "segmented_lookup_cpp")
    ext.guard_colbert_loads()
    ext.guard_colbert_loads()  # once only
    module = sys.modules["colbert.search.strided_tensor"]
    loaded = module.load(name="segmented_lookup_cpp", sources=["x.cpp"], extra_cflags=["-O3"])
    assert loaded.name == "segmented_lookup_cpp"
    assert loads == ["segmented_lookup_cpp"]
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("rag-qa-arena: removed a stale lock") and lines[0].endswith(str(folder))
    assert lines[1].startswith("rag-qa-arena: compiling ColBERT's C++ extension segmented_lookup_cpp")
    assert any(line.startswith("rag-qa-arena: still compiling segmented_lookup_cpp") for line in lines[2:-1])
    assert lines[-1].startswith("rag-qa-arena: compiled segmented_lookup_cpp in")
    assert all("\x1b" not in line and "\r" not in line for line in lines)

    (folder / "segmented_lookup_cpp.so").touch()  # built: a load says nothing
    monkeypatch.setattr(ext.BuildLockPolicy, "from_env", classmethod(lambda cls, environ=None: ext.BuildLockPolicy()))
    module.load(name="segmented_lookup_cpp", sources=["x.cpp"])
    assert capsys.readouterr().err == ""
