"""A run's progress while its worker runs: the worker and its engine print phases and iterations as lines of the
run's log (``progress: sampling · iteration 1,200 of 2,000``), and the campaign or check that waits on it shows the
newest beside the run (a 10-minute run used to say nothing until it ended).

No report costs the sampler a step: each is printed between the sampler's timed spans (NumPyro's compile, warmup
and sampling), or read from what the sampler sends anyway (Stan's logger messages, every ``refresh`` iterations;
nutpie's progress callback, once a minute).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

PREFIX = "progress: "
# How often a waiting campaign reads a run's log for its newest report, and how often a log (nohup, CI) rather
# than a terminal gets a line of it.
POLL_S = 1.0
LOGGED_S = 60.0

# What is shown of a run while it runs: its newest report and the seconds since it started.
Show = Callable[[str, float], None]


def report(text: str) -> None:
    """One report, a line of the run's log (the worker's stdout is its log)."""
    print(PREFIX + text, flush=True)


class Throttle:
    """Lets a report through at most once every ``every_s`` seconds: the engines' loops ask far more often."""

    def __init__(self, every_s: float):
        self.every_s = every_s
        self.last = float("-inf")

    def due(self) -> bool:
        now = time.monotonic()
        if now - self.last < self.every_s:
            return False
        self.last = now
        return True


class LogReader:
    """The newest report of a log that its worker is still writing: reads on from where it stopped, whole lines
    only (a line being written is read once it ends)."""

    def __init__(self, log: Path):
        self.log = log
        self.offset = 0

    def newest(self) -> str | None:
        """The newest report since the last call (None: none since)."""
        try:
            with open(self.log, "rb") as stream:
                stream.seek(self.offset)
                chunk = stream.read()
        except OSError:
            return None
        end = chunk.rfind(b"\n") + 1
        if not end:
            return None
        self.offset += end
        found = None
        for line in chunk[:end].splitlines():
            if line.startswith(PREFIX.encode()):
                found = line[len(PREFIX) :].decode(errors="replace").strip()
        return found


def on_bar(label: str, progress, task) -> Show:
    """A terminal's progress bar (rich's) names the run, its newest report and its seconds so far."""

    def show(text: str, elapsed_s: float) -> None:
        progress.update(task, description=f"{label} · {text} · {elapsed_s:.0f} s")

    return show


def in_log(label: str, say) -> Show:
    """A log gets a run's newest report once every LOGGED_S (a shorter run's none): a log keeps every line."""
    said = [0.0]

    def show(text: str, elapsed_s: float) -> None:
        if elapsed_s - said[0] >= LOGGED_S:
            said[0] = elapsed_s
            say(f"  {label}: {text} ({elapsed_s:.0f} s)", highlight=False, soft_wrap=True)

    return show
