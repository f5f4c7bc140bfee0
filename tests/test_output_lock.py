"""The output lock (``lfrqa.kernel.exclusive_lock``, built on ``filelock``): one writer per output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lfrqa.kernel import RunLocked, exclusive_lock

HOLDER = """
import sys, time
from lfrqa.kernel import exclusive_lock
with exclusive_lock(sys.argv[1], busy="held"):
    print("locked", flush=True)
    time.sleep(120)
"""


def test_a_second_holder_is_refused_with_the_busy_message_and_the_file_stays(tmp_path):
    lock = tmp_path / ".lock"
    with exclusive_lock(lock, busy=f"Another run is writing {tmp_path} right now"):
        with pytest.raises(RunLocked, match=f"^Another run is writing {tmp_path} right now$"):
            with exclusive_lock(lock, busy=f"Another run is writing {tmp_path} right now"):
                pass
    assert lock.exists()  # kept: a third process must lock the same file
    with exclusive_lock(lock, busy="x"):  # free again after the block
        pass


def test_the_lock_of_a_killed_process_is_free_again(tmp_path):
    lock = tmp_path / ".lock"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunLocked, match="^held by the other$"):
            with exclusive_lock(lock, busy="held by the other"):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    deadline = time.monotonic() + 120  # a hang guard: the kernel frees a killed process's lock at once
    while True:
        try:
            with exclusive_lock(lock, busy="still held"):
                break
        except RunLocked:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_an_unwritable_lock_folder_names_the_path(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError, match="a-file"):
        with exclusive_lock(blocker / ".lock", busy="x"):
            pass


def test_no_hand_written_fcntl_lock():
    source = (Path(__file__).parents[1] / "lfrqa" / "kernel" / "_outputs.py").read_text()
    assert "fcntl" not in source and "from filelock import" in source
