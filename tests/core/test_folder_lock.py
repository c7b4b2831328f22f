"""One writer per results folder (``runner.core.folder_lock``): another process is refused naming the holder, or
waited for; a dead holder's lock file is taken over; a holder takes its own lock again at once."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from stanjax.models import ROOT, UsageError
from stanjax.runner.core import folder_lock
from stanjax.runner.core.folder_lock import LOCK_FILE, held

# Another process: takes the folder's lock (argv[1]), says so, holds it for argv[2] seconds; or, given "try", says
# whether it could take it at once (exit 2 with the refusal if not).
OTHER = """import sys, time
from stanjax.models import UsageError
from stanjax.runner.core.folder_lock import held
try:
    with held(sys.argv[1]):
        print("took", flush=True)
        time.sleep(float(sys.argv[2]))
except UsageError as refused:
    print(refused, flush=True)
    sys.exit(2)
"""


def other(folder, seconds: float) -> subprocess.Popen:
    """Another process holding ``folder``'s lock for ``seconds``, returned once it holds it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", OTHER, str(folder), str(seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline() == "took\n"
    return proc


def taken_elsewhere(folder) -> bool:
    """Whether another process can take ``folder``'s lock at once."""
    done = subprocess.run([sys.executable, "-c", OTHER, str(folder), "0"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode in (0, 2), done.stderr
    return done.returncode == 0


def test_a_folder_another_process_holds_is_refused_in_one_line_naming_it(tmp_path):
    holder = other(tmp_path, 60)
    try:
        with pytest.raises(UsageError) as refused, held(tmp_path):
            pytest.fail("took a lock another process holds")
    finally:
        holder.kill()
        holder.wait()
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"{tmp_path} is in use by pid {holder.pid} (-c {tmp_path} 60, since ")
    assert said.endswith("Z); wait for it, or add --wait")


def test_with_wait_it_says_once_that_it_waits_then_holds_the_folder(tmp_path):
    holder = other(tmp_path, 3)
    said, start = [], time.monotonic()
    with held(tmp_path, wait=True, say=said.append):
        waited = time.monotonic() - start
        named = json.loads((tmp_path / LOCK_FILE).read_text())
    holder.wait()
    assert len(said) == 1 and said[0].startswith(f"{tmp_path} is in use by pid {holder.pid} (")
    assert said[0].endswith(": waiting for it to finish") and waited > 1.5
    assert named["pid"] == os.getpid() and set(named) == {"pid", "host", "command", "since"}
    assert (tmp_path / LOCK_FILE).read_text() == ""  # let go: it names no one


def test_the_lock_file_of_a_killed_holder_is_taken_over(tmp_path):
    holder = other(tmp_path, 60)
    holder.send_signal(signal.SIGKILL)  # no clean-up: the lock file still names it
    holder.wait()
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == holder.pid
    with held(tmp_path):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    # a lock file naming a process that never held it (copied from elsewhere, a pid long gone) names only
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": 1, "host": "x", "command": "stanjax run", "since": "-"}))
    with held(tmp_path):
        assert not taken_elsewhere(tmp_path)


def test_a_holder_takes_its_own_lock_again_and_lets_go_with_its_last_hold(tmp_path):
    """``stanjax run`` holds OUT while it plans, then ``run_jobs`` and every run take it again; a GPU campaign's two
    lanes are threads of one holder. None deadlocks; the lock goes with the outermost hold."""
    folder, link = tmp_path / "out", tmp_path / "link"
    folder.mkdir()
    link.symlink_to(folder)
    inside, done = [], threading.Event()

    def lane():
        with held(folder):
            inside.append(threading.current_thread().name)
            done.wait(30)

    with held(folder):
        with held(link):  # the same folder, named another way
            assert not taken_elsewhere(folder)
        assert not taken_elsewhere(folder)  # the inner hold let go; the outer one holds
        lanes = [threading.Thread(target=lane) for _ in range(2)]
        for thread in lanes:
            thread.start()
        deadline = time.monotonic() + 30
        while len(inside) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(inside) == 2  # both lanes inside at once
        done.set()
        for thread in lanes:
            thread.join(30)
        assert not taken_elsewhere(folder)
    assert taken_elsewhere(folder)


@pytest.mark.parametrize(
    "where, said",
    [
        ("", "the results folder is an empty path; name a folder ('.' for the current one)"),
        ("file", "cannot write results to {tmp}/file: it is a file, not a folder"),
        ("file/results", "cannot write results to {tmp}/file/results: {tmp}/file is a file, not a folder"),
    ],
)
def test_a_folder_that_cannot_take_results_is_one_line_and_nothing_is_made(tmp_path, where, said):
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="^" + re.escape(said.format(tmp=tmp_path)) + "$"):
        folder_lock.check(str(tmp_path / where) if where else "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
