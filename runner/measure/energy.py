"""Energy and memory of a span of a run: GPU power through NVML, CPU package energy through RAPL, sampled in a
background thread while the span runs (:class:`Meter`), recorded as :class:`stanjax.runner.core.run_measures.RunEnergy`.

Every source has one small interface (:class:`Source`): a ``name``, the range ``wrap_j`` at which a cumulative
counter wraps to 0, and ``read()``, which gives a :class:`Reading` or raises with the reason it cannot. A sensor
this machine lacks, or cannot read, is recorded as missing with that reason, never as 0 J: ESS per joule is a cost,
and a cost of 0 would read as free.
"""

from __future__ import annotations

import resource
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple, Protocol

import pynvml

from stanjax.runner.core.run_measures import RunEnergy, SourceEnergy

MIB = 2**20
POWERCAP = Path("/sys/class/powercap")
INTERVAL_S = 0.1


class Reading(NamedTuple):
    """One reading of a source: a cumulative counter (``energy_j``) or the power now (``watts``), and a GPU's
    memory in use."""

    energy_j: float | None = None
    watts: float | None = None
    memory_mib: float | None = None


class Source(Protocol):
    name: str  # the key of its measurement in the record
    wrap_j: float | None  # where its counter wraps to 0; None: it does not wrap (or gives watts)

    def read(self) -> Reading: ...


class SensorError(Exception):
    """Why a source cannot be read: its text is what the record keeps."""


class Unreadable:
    """A sensor this machine does not offer, as a source that says why whenever it is read."""

    wrap_j: float | None = None

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason

    def read(self) -> Reading:
        raise SensorError(self.reason)


class NvmlGpu:
    """One GPU as NVML sees it: its cumulative energy counter (mJ, Volta and later) where the driver supports it,
    else its power (mW) integrated by the trapezoid rule; and its memory in use, every process's. NVML ignores
    CUDA_VISIBLE_DEVICES (and may order GPUs unlike CUDA), so :meth:`discover` gives every GPU of the machine."""

    wrap_j: float | None = None  # a 64-bit count of mJ

    def __init__(self, index: int):
        self.name = f"gpu{index}"
        self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            self._counter = True
        except pynvml.NVMLError_NotSupported:
            self._counter = False

    def read(self) -> Reading:
        memory_mib = pynvml.nvmlDeviceGetMemoryInfo(self._handle).used / MIB
        if self._counter:
            return Reading(
                energy_j=pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle) / 1e3, memory_mib=memory_mib
            )
        return Reading(watts=pynvml.nvmlDeviceGetPowerUsage(self._handle) / 1e3, memory_mib=memory_mib)

    @classmethod
    def discover(cls) -> list[Source]:
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as err:
            return [Unreadable("gpu", f"no NVML: {err}")]
        if not count:
            return [Unreadable("gpu", "no GPU: NVML sees none")]
        found: list[Source] = []
        for index in range(count):
            try:
                found.append(cls(index))
            except pynvml.NVMLError as err:
                found.append(Unreadable(f"gpu{index}", f"NVML cannot open it: {err}"))
        return found


class Rapl:
    """One CPU package's RAPL domain (``intel-rapl:N`` named ``package-N``; AMD's driver exposes the same): a
    cumulative ``energy_uj`` that wraps to 0 at ``max_energy_range_uj``. It counts the whole package, other
    processes' work on it included. Since Linux 5.10 ``energy_uj`` is readable by root only."""

    def __init__(self, zone: Path):
        self.name = f"cpu-{_text(zone / 'name')}"
        self._energy = zone / "energy_uj"
        self.wrap_j: float | None
        try:
            self.wrap_j = int(_text(zone / "max_energy_range_uj")) / 1e6
        except (OSError, ValueError):
            self.wrap_j = None

    def read(self) -> Reading:
        try:
            return Reading(energy_j=int(_text(self._energy)) / 1e6)
        except OSError as err:
            raise SensorError(f"energy_uj not readable: {err.strerror}") from err

    @classmethod
    def discover(cls, root: Path = POWERCAP) -> list[Source]:
        if not root.is_dir():
            return [Unreadable("cpu-package", f"no {root}")]
        zones = [zone for zone in sorted(root.glob("intel-rapl:*")) if _name(zone).startswith("package-")]
        if not zones:
            return [Unreadable("cpu-package", f"no RAPL package domain under {root}")]
        return [cls(zone) for zone in zones]


def _text(path: Path) -> str:
    return path.read_text().strip()


def _name(zone: Path) -> str:
    try:
        return _text(zone / "name")
    except OSError:
        return ""


def machine_sources() -> list[Source]:
    """Every GPU and CPU package of this machine, each readable or saying why not."""
    return [*NvmlGpu.discover(), *Rapl.discover()]


def peak_host_memory_mib() -> float:
    """This process's peak resident memory over its life, or its largest finished child's where larger (Stan's
    chains are forked children; chains that run at once share pages, so no sum of them would be exact). Linux
    gives ru_maxrss in KiB."""
    return max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


class _Track:
    """A source's readings over the span, with their times, or the first reason it could not be read."""

    def __init__(self, source: Source):
        self.source, self.missing = source, ""
        self.readings: list[tuple[float, Reading]] = []

    def sample(self) -> None:
        if self.missing:
            return
        try:
            reading = self.source.read()
        except Exception as err:  # whatever a sensor raises, the run goes on and the record says why
            self.missing = str(err) or type(err).__name__
            return
        self.readings.append((time.perf_counter(), reading))

    def measured(self, wall_s: float) -> SourceEnergy:
        joules = None if self.missing else self._joules()
        if joules is None:
            return SourceEnergy(joules=None, mean_watts=None, samples=len(self.readings), missing=self.missing)
        memory = [r.memory_mib for _, r in self.readings if r.memory_mib is not None]
        return SourceEnergy(
            joules=joules,
            mean_watts=joules / wall_s,
            samples=len(self.readings),
            peak_memory_mib=max(memory) if memory else None,
        )

    def _joules(self) -> float | None:
        """A counter's increments summed (one wrap between two readings at most: readings are far more often
        than a wrap), or the power's trapezoid integral; None, with the reason, where neither can be had."""
        if len(self.readings) < 2:
            self.missing = f"{len(self.readings)} reading(s): too few to measure"
            return None
        # A source gives one kind of reading every time: a counter's, or else its power.
        joules = 0.0
        if self.readings[0][1].energy_j is None:
            for (t_a, a), (t_b, b) in pairwise(self.readings):
                assert a.watts is not None and b.watts is not None, "a source without a counter gives its power"
                joules += (a.watts + b.watts) / 2 * (t_b - t_a)
            return joules
        for (_, a), (_, b) in pairwise(self.readings):
            assert a.energy_j is not None and b.energy_j is not None, "a counter's every reading has its count"
            step = b.energy_j - a.energy_j
            if step < 0:
                if self.source.wrap_j is None:
                    self.missing = "energy counter went backwards and its range is unknown"
                    return None
                step += self.source.wrap_j
            joules += step
        return joules


class Meter:
    """Samples every source every ``interval_s`` seconds in a background thread while the ``with`` block runs
    (and once at its start and end); ``result`` then holds the span's :class:`RunEnergy`."""

    def __init__(self, span: str, sources: list[Source] | None = None, interval_s: float = INTERVAL_S):
        self.span, self.interval_s = span, interval_s
        self._tracks = [_Track(source) for source in (machine_sources() if sources is None else sources)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="energy-meter", daemon=True)
        self.result: RunEnergy | None = None

    def _sample(self) -> None:
        for track in self._tracks:
            track.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> Meter:
        self._start = time.perf_counter()
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        wall_s = time.perf_counter() - self._start
        self.result = RunEnergy(
            span=self.span,
            wall_s=wall_s,
            sources={t.source.name: t.measured(wall_s) for t in self._tracks},
            peak_host_memory_mib=peak_host_memory_mib(),
        )
