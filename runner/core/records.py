"""Result records: one JSON object per run (:class:`RunRecord`), appended to ``<out>/results.jsonl``.

This module owns the schema: the record type, its version and the upgrade of older versions (the steps are
:mod:`stanjax.runner.core.migrations`), reading and writing, and the keys every consumer groups by
(:class:`MeasurementKey`: repeats of one measurement; :class:`stanjax.runner.core.config.RunKey`: a run already done).
A record's measured parts are :mod:`stanjax.runner.core.run_measures`; the machine and versions it was made with,
:mod:`stanjax.runner.core.environment`. Appends are fsync'ed one record at a time, so a killed campaign keeps
every finished run, and a failed append leaves the file as it was. The reader keeps every intact record: a line
that is not a JSON object (a torn line, a corrupted line), a run that does not fit the type or a record of an
unknown schema is skipped with a warning naming the file and lines; only a file of nothing but records of another
schema is refused.
"""

from __future__ import annotations

import gzip
import json
import os
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

import msgspec

from stanjax.models import UsageError
from stanjax.runner.core import packing
from stanjax.runner.core.config import RunConfig, RunKey
from stanjax.runner.core.engine_registry import label
from stanjax.runner.core.environment import Machine, Provenance, provenance
from stanjax.runner.core.migrations import MIGRATIONS
from stanjax.runner.core.run_measures import MachineLoad, RunEnergy, RunMetrics, RunTimings

SCHEMA_VERSION = 8
RESULTS_FILE = "results.jsonl"
MEASUREMENTS_FILE = "measurements.jsonl"  # what is measured beside runs: studies, calibrations
RESULTS_FILES = (RESULTS_FILE, RESULTS_FILE + ".gz")  # a closed campaign's may be committed gzipped


def migrate(record: dict) -> dict:
    """The record in the current schema, or RecordsError for a version this stanjax cannot read."""
    version = record["schema_version"]
    while version != SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise RecordsError(
                f"schema_version {version!r}, this stanjax reads {SCHEMA_VERSION} "
                f"(and upgrades {', '.join(map(str, MIGRATIONS))})"
            )
        record = MIGRATIONS[version](record)
        version = record["schema_version"]
    return record


class RecordsError(UsageError):
    """A results file that cannot be read as records of this schema."""


class MeasurementKey(NamedTuple):
    """What makes runs repeats of one measurement, and so comparable: the same machine, study, model, sizes,
    sampler settings and data, and the same engine setup (its label: engine, front end, device, precision,
    chain method). The report, the headline ratios and ``stanjax compare`` group by it; everything but the label
    (``PROBLEM_FIELDS``) is what two engine setups must share to be paired."""

    machine: str
    study: str
    model_id: str
    size: str
    sizes: str
    config_hash: str
    data_hash: str
    cores: int  # the cores the run was given (0: not recorded)
    label: str


MEASUREMENT_FIELDS = list(MeasurementKey._fields)
PROBLEM_FIELDS = MEASUREMENT_FIELDS[:-1]


def sizes_text(sizes: dict[str, int] | None) -> str:
    """A run's data sizes as one sortable string ("D=54, N=10000"); "" when not recorded."""
    return ", ".join(f"{name}={value}" for name, value in sorted((sizes or {}).items()))


class RunRecord(msgspec.Struct, kw_only=True):
    """One run of one (model, engine setup, sampler settings, repeat): the schema of ``results.jsonl``.

    Written by the campaign (identity, provenance) and the worker (timings, metrics, gates, energy, the cores it
    ran on); read back through :func:`read`, which upgrades older schemas
    (:data:`stanjax.runner.core.migrations.MIGRATIONS`) and refuses what does not fit this type. Fields added with a
    default (``core_ids``, ``energy``, ``load``, ``entropy``) need no new schema version: an older record reads as
    not having measured them, and an older stanjax ignores them (a new version would make it skip the records)."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["run"] = "run"
    run_id: str
    campaign_id: str
    created: str
    study: str = ""
    model_id: str
    size: str
    sizes: dict[str, int] | None  # the data sizes the run used (the preset's, resized), as run; None: unknown
    engine: str
    front_end: str
    device: str
    precision: str
    chain_method: str
    threads_per_chain: int = 1  # Stan's within-chain threads (reduce_sum); 1 for JAX engines (see engine_info)
    cores: int | None = None  # CPU cores the run's worker was pinned to; None: recorded before runs were pinned
    core_ids: list[int] | None = None  # which CPUs the worker ran on (all usable ones if unpinned); None: not recorded
    repeat: int
    # The paired block (``Job.block``) and the pairing (``Job.pairing``) the run belongs to: a ratio is taken only
    # between runs of one pairing and one block. None / "": recorded before blocks (see ``block_of``).
    block: int | None = None
    pairing: str = ""
    # The instruction set both sides were built for (``runner.core.config.ISAS``); "": recorded before the runner chose
    # one (bundled Stan then built for baseline x86-64, SSE2; XLA for the host).
    isa: str = ""
    program: str = ""  # Stan: "" the model's own program, "expert" its expert rewrite, "-O1": stanc's optimiser
    config: RunConfig
    config_hash: str
    sampler_seed: int | None = None
    # The campaign's entropy the sampler seed came from (``Job.entropy``): a resumed campaign gives its new runs the
    # same, so a block's runs share their seed. None: recorded before it was, a campaign --resume cannot go on with.
    entropy: int | None = None
    provenance: Provenance
    status: Literal["ok", "error", "timeout"]
    wall_s: float | None = None
    load: MachineLoad | None = None  # None: measured before the campaign recorded the machine's load
    error: str = ""
    log: str | None = None
    data_hash: str | None = None
    engine_info: dict[str, Any] = {}
    timings: RunTimings | None = None
    sampler: dict[str, Any] | None = None
    metrics: RunMetrics | None = None
    energy: RunEnergy | None = None  # None: a failed run, or measured before energy was recorded
    valid: bool
    failed_gates: list[str]
    gates: dict[str, dict[str, Any]]

    @property
    def machine(self) -> str:
        """The machine's label: its slug, with its fingerprint where the record has one."""
        return self.provenance.machine.label

    @property
    def label(self) -> str:
        return label(
            self.engine,
            self.front_end,
            self.device,
            self.precision,
            self.chain_method,
            self.engine_info.get("matmul_precision"),
            self.threads_per_chain,
            self.isa,
            self.program,
        )

    def key(self) -> RunKey:
        return RunKey(
            self.model_id,
            self.engine,
            self.front_end,
            self.device,
            self.precision,
            self.chain_method,
            self.threads_per_chain,
            self.isa or "native",
            self.program,
            self.cores or 0,
            self.config_hash,
            self.repeat,
        )

    @property
    def clean(self) -> bool:
        """Measured on a quiet machine: a load was measured and it was under the threshold. A record without a load
        field, or whose load could not be measured, is not known to be clean."""
        return self.load is not None and self.load.other_processes_cores is not None and not self.load.loaded

    @property
    def block_of(self) -> tuple[str, int]:
        """(pairing, block) of the run; for a record made before blocks, its campaign and repeat: those campaigns
        ran every engine of a repeat back to back, so repeat r was block r in all but name."""
        return (self.pairing or self.campaign_id, self.repeat if self.block is None else self.block)

    def measurement_key(self) -> MeasurementKey:
        return MeasurementKey(
            self.machine,
            self.study,
            self.model_id,
            self.size,
            sizes_text(self.sizes),
            self.config_hash,
            self.data_hash or "",
            self.cores or 0,
            self.label,
        )


def independent(runs: list[RunRecord]) -> list[RunRecord]:
    """The runs that are independent repeats: of completed runs with the same measurement key and sampler seed
    (the same draws: one run recorded twice, or campaigns that seeded alike, as before seeds took campaign
    entropy) only the first is kept, so intervals come from independent seeds only. A loaded run and its clean
    rerun (the same job, seed included) are both kept: the loaded one enters no ratio, only the count of runs
    left out, and the rerun is the one its block needs."""
    seen, kept = set(), []
    for r in runs:
        if r.status == "ok" and r.sampler_seed is not None:
            key = (r.measurement_key(), r.sampler_seed, bool(r.load and r.load.loaded))
            if key in seen:
                continue
            seen.add(key)
        kept.append(r)
    return kept


def to_builtins(record) -> dict:
    """A record (or a measurement dict) as plain JSON types."""
    return msgspec.to_builtins(record) if isinstance(record, msgspec.Struct) else record


def done(runs: list[RunRecord]) -> set[RunKey]:
    """The keys of the runs already done: those with an ok record (failed runs are run again)."""
    return {r.key() for r in runs if r.status == "ok"}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def measurement(study: str, fields: dict) -> dict:
    """A study measurement that is not a sampler run, with the same provenance as a run record."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "measurement",
        "study": study,
        "created": now(),
        "provenance": to_builtins(provenance()),
        **fields,
    }


def measurement_machine(measurement: dict) -> Machine:
    return msgspec.convert(measurement["provenance"]["machine"], Machine)


def measurement_device(measurement: dict) -> str:
    """Where a study measurement ran: "cpu" or "gpu" (measurements made before the field existed: JAX ran where
    the study's --device said, NumPy on the CPU)."""
    if "device" in measurement:
        return measurement["device"]
    on_gpu = measurement.get("backend") == "jax" and "--device gpu" in measurement["provenance"]["command"]
    return "gpu" if on_gpu else "cpu"


def append(path: Path, record) -> None:
    """Append one record (a RunRecord or a measurement dict) as a JSON line, durable before returning. A file
    whose last line is torn (no newline: a run died mid-append) gets its newline first, so the new record starts
    on a line of its own and the torn one stays alone, skipped by the reader. A write that fails (a full disk) or
    is interrupted cuts the file back to its size before, then raises: no half record is left for every later
    read to warn about."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (packing.canonical(to_builtins(record)) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            written = 0
            while written < len(data):  # a write may take part of the line (a disk filling up)
                written += os.write(fd, data[written:])
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def _files(path: Path | list[Path]) -> list[Path]:
    """The ``.jsonl`` (or gzipped ``.jsonl.gz``: a closed campaign's committed records) files of a file, a folder
    (every one below it) or a list of them (results from several machines, merged), each once."""
    if isinstance(path, (list, tuple)):
        return list(dict.fromkeys(file for one in path for file in _files(one)))
    path = Path(path)
    if path.is_dir():
        return sorted([*path.rglob("*.jsonl"), *path.rglob("*.jsonl.gz")])
    if path.exists():
        return [path]
    raise RecordsError(f"no results at {path}")


class SkippedLines(UserWarning):
    """Lines of one results file the reader skipped: the file, how many and why, for a reader that says so itself."""

    def __init__(self, file: Path, count: int, why: str):
        super().__init__(f"{file}: skipped {why}")
        self.file, self.count, self.why = file, count, why


class Read(NamedTuple):
    runs: list[RunRecord]
    measurements: list[dict]
    skipped: list[SkippedLines]


def _read_file(file: Path, summaries: bool = True) -> tuple[list[RunRecord], list[dict], SkippedLines | None]:
    """The runs and the measurements of one ``.jsonl`` file, and what was skipped. A line that is not a JSON object
    (torn, corrupted), a run that does not fit :class:`RunRecord`, or a record of a schema this stanjax cannot read
    is skipped, named with its line and why; only a file whose records are all of another schema is refused (it is
    history this stanjax cannot read, not damage). Without ``summaries``, a packed file's runs come without the
    per-parameter summaries its sidecar holds."""
    if file.name == RESULTS_FILE + ".gz" and summaries:
        data = packing.expand(file)  # with the summaries a sidecar holds
    else:
        data = gzip.decompress(file.read_bytes()) if file.suffix == ".gz" else file.read_bytes()
    lines = data.decode("utf-8", errors="replace").splitlines()
    runs, measurements = [], []
    skipped: list[int] = []
    invalid: list[tuple[int, str]] = []
    foreign: dict[int, list[tuple[int, RecordsError]]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("schema_version"), int):
            skipped.append(number)
            continue
        try:
            record = migrate(record)
        except RecordsError as err:
            foreign.setdefault(record["schema_version"], []).append((number, err))
            continue
        if record.get("kind", "run") != "run":
            measurements.append(record)
            continue
        try:
            runs.append(msgspec.convert(record, RunRecord))
        except (msgspec.ValidationError, KeyError, TypeError) as err:
            invalid.append((number, str(err)))
    other_schemas = [
        f"{len(found)} record(s) of schema_version {version} (lines {[n for n, _ in found][:10]}; this "
        f"stanjax reads {SCHEMA_VERSION} and upgrades {', '.join(map(str, MIGRATIONS))})"
        for version, found in foreign.items()
    ]
    if foreign and not (runs or measurements or skipped or invalid):
        raise RecordsError(f"{file}: nothing but {'; '.join(other_schemas)}")
    problems = []
    if skipped:  # torn: a run died mid-append after others were written; a file of that line alone is unreadable
        torn = skipped == [len(lines)] and (runs or measurements or invalid or foreign)
        problems.append("a torn last line" if torn else f"unreadable line(s) {skipped[:10]}")
    problems += [f"line {number}, not a run record: {why}" for number, why in invalid[:10]]
    problems += other_schemas
    count = len(skipped) + len(invalid) + sum(map(len, foreign.values()))
    return runs, measurements, SkippedLines(file, count, "; ".join(problems)) if problems else None


def read_all(path: Path | list[Path], summaries: bool = True) -> Read:
    """The runs, the measurements and the skipped lines (of each damaged file) of what :func:`read` reads, each
    file read once and nothing warned: for a reader that says itself what was skipped."""
    found = [_read_file(file, summaries) for file in _files(path)]
    return Read(
        [run for runs, _, _ in found for run in runs],
        [m for _, measurements, _ in found for m in measurements],
        [skipped for _, _, skipped in found if skipped],
    )


def read(path: Path | list[Path], summaries: bool = True) -> list[RunRecord]:
    """The run records of one ``.jsonl`` file, of every ``*.jsonl`` below a folder (sorted by path), or of a list
    of files and folders, with a :class:`SkippedLines` warning per damaged file. ``summaries=False`` is for readers
    of timings and settings alone (run lengths, estimates): a closed campaign's per-parameter summaries stay in
    their sidecar (all of results/: 8.8 -> 0.6 CPU seconds)."""
    done = read_all(path, summaries)
    for skipped in done.skipped:
        warnings.warn(skipped, stacklevel=2)
    return done.runs


def read_measurements(path: Path | list[Path]) -> list[dict]:
    """The studies' measurements that are not sampler runs (RWMH, sharded gradients), as dicts; warned as read."""
    done = read_all(path)
    for skipped in done.skipped:
        warnings.warn(skipped, stacklevel=2)
    return done.measurements
