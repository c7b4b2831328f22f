"""Stopping a campaign as Ctrl-C does: SIGTERM raised as a KeyboardInterrupt that carries its signal, a record's
append and count held together against a stop, and the one line a stopped campaign ends with."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from pathlib import Path


class Stopped(KeyboardInterrupt):
    """SIGTERM (or another stop signal) during a campaign: handled as Ctrl-C is, with the signal's exit code."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stopped_by(signum: int):
    """Within: ``signum`` stops the campaign the way Ctrl-C does (records kept, the worker ended, one line)."""

    def handler(received, frame):
        raise Stopped(received)

    previous = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, previous)


@contextmanager
def stop_signals_held():
    """Ctrl-C and SIGTERM wait until the block ends, in the main thread (where Python runs their handlers): a
    record is then both on disk and counted in ``written``, or neither (a stop between the two said "0 of 20 runs
    finished and recorded" beside a record on disk). Within, a stop signal is only noted; after, it is raised
    again for the handlers in place before. Masking the signals would not do: another thread of the process can
    take the signal, and Python still runs the handler in the main thread at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    stops = (signal.SIGINT, signal.SIGTERM)
    before = {signum: signal.signal(signum, lambda signum, frame: received.append(signum)) for signum in stops}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        for signum in received:
            signal.raise_signal(signum)


def interrupted(stop: KeyboardInterrupt, written: list, jobs: list, out: Path) -> int:
    """One line on what was kept; exit code 128 + the signal (130 for Ctrl-C, 143 for SIGTERM)."""
    signum = getattr(stop, "signum", signal.SIGINT)  # a plain KeyboardInterrupt is Ctrl-C
    print(
        f"interrupted ({signal.Signals(signum).name}): {len(written)} of {len(jobs)} runs finished and recorded "
        f"in {out}"
    )
    return 128 + signum
