"""One writer per results folder: every verb that appends to a folder (run, study, campaign, nightly, check, the
API) holds its lock, ``OUT/.stanjax.lock``, from before it reads what the folder holds until its last record is
written. Two ``--resume`` of one folder had both run its missing runs, under one campaign ID.

The lock is the kernel's (``flock`` on the lock file): it ends with its process, however that ends, so a lock file
left by a dead process is taken over as it is. What the file says (pid, host, command, start) only names the
holder in the refusal. A process that holds a folder's lock takes it again at once (``run`` plans under it, then
``run_jobs`` takes it too; a GPU campaign's two lanes are threads of one holder)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from stanjax.models import UsageError, option
from stanjax.runner.core.environment import command_line

LOCK_FILE = ".stanjax.lock"


@dataclass(frozen=True)
class Holder:
    """Who holds a folder's lock, as its lock file names it."""

    pid: int
    host: str
    command: str
    since: str  # UTC, to the second

    def __str__(self) -> str:
        where = "" if self.host == socket.gethostname() else f" on {self.host}"
        return f"pid {self.pid}{where} ({self.command}, since {self.since})"


# This process's locks: the folder (resolved) -> its lock file's descriptor and how many holds are open on it.
_held: dict[Path, list[int]] = {}
_guard = threading.Lock()


def check(folder: str | Path) -> Path:
    """``folder`` as a Path if results can be written there, else one line; creates nothing, so that a results
    path that cannot be used is refused before the planning (seconds of static checks) and bad input leaves no
    folder behind."""
    if not str(folder):
        raise UsageError("the results folder is an empty path; name a folder ('.' for the current one)")
    folder = Path(folder)
    found = next(path for path in (folder, *folder.parents) if path.exists())
    if not found.is_dir():
        why = "it is a file" if found == folder else f"{found} is a file"
        raise UsageError(f"cannot write results to {folder}: {why}, not a folder")
    if not os.access(found, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write results to {folder}: {found} is not writable")
    return folder


@contextmanager
def held(
    folder: str | Path, wait: bool = False, say: Callable[[str], None] = partial(print, flush=True)
) -> Iterator[Path]:
    """Within: this process is ``folder``'s one writer (made if missing). Held by another process: one line naming
    it (UsageError), or with ``wait`` one line said and a wait until it ends."""
    folder = check(folder)
    with _guard:  # while a thread waits, this process's other threads wait to take or let go of a lock too
        key = folder.resolve()
        if key in _held:
            _held[key][1] += 1
        else:
            _held[key] = [_take(folder, wait, say), 1]
    try:
        yield folder
    finally:
        with _guard:
            _held[key][1] -= 1
            if not _held[key][1]:
                fd = _held.pop(key)[0]
                os.ftruncate(fd, 0)  # named by no one: the lock file left behind says nothing stale
                os.close(fd)


def _take(folder: Path, wait: bool, say: Callable[[str], None]) -> int:
    """The lock file's descriptor, its flock taken and the file naming this process."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise UsageError(f"cannot write results to {folder}: {err.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            if not wait:
                raise UsageError(
                    f"{folder} is in use by {holder}; wait for it, or add {option('wait', True)}"
                ) from None
            say(f"{folder} is in use by {holder}: waiting for it to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        me = Holder(
            os.getpid(), socket.gethostname(), command_line(), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        )
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(asdict(me)) + "\n").encode(), 0)
    except BaseException:
        os.close(fd)  # its flock, if taken, with it
        raise
    return fd


def _holder(fd: int) -> str:
    """The holder as the lock file names it; a holder that has not written its name yet (it took the lock a moment
    ago) as what it is."""
    try:
        return str(Holder(**json.loads(os.pread(fd, 4096, 0))))
    except (ValueError, TypeError):
        return "another process (starting: its lock file names no one yet)"
