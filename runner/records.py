"""Result records: one JSON object per run (:class:`RunRecord`), appended to ``<out>/results.jsonl``.

This module owns the schema: the record type, its version and the migrations of older versions, reading and
writing, and the keys every consumer groups by (:class:`MeasurementKey`: repeats of one measurement;
:class:`stanjax.runner.config.RunKey`: a run already done). Appends are flushed and fsync'ed one record at a time, so a
killed campaign keeps every finished run. The reader keeps every intact record: a line that is not a JSON object
(a torn line, a corrupted line), a run that does not fit the type or a record of an unknown schema is skipped with
a warning naming the file and lines; only a file of nothing but records of another schema is refused.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import re
import subprocess
import sys
import warnings
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, NamedTuple

import msgspec

from stanjax.models import ROOT, UsageError
from stanjax.runner.config import RunConfig, RunKey
from stanjax.runner.engines import label

SCHEMA_VERSION = 6
RESULTS_FILE = "results.jsonl"
RESULTS_FILES = (RESULTS_FILE, RESULTS_FILE + ".gz")  # a closed campaign's may be committed gzipped
# glibc's malloc: fixed thresholds (16 MiB before a block is mmapped, 128 MiB free before the heap is trimmed) for
# every worker and what it starts. With glibc's adaptive defaults a process's allocator depends on what it had
# allocated before: a fresh CmdStan spent ~20 % of its time in page faults on Bradley-Terry at 20k matches
# (3 M minor faults in 600 iterations), while bundled Stan's chains, forked from a worker that had imported arviz,
# had almost none. A GLIBC_TUNABLES set by the user is kept.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=16777216:glibc.malloc.trim_threshold=134217728"


def worker_env() -> dict[str, str]:
    """The environment of every worker process (runs and study measurements)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", "GLIBC_TUNABLES": os.environ.get("GLIBC_TUNABLES", MALLOC_TUNABLES)}


def _v1_to_v2(record: dict) -> dict:
    """Schema 2 names every record's kind and every run's precision and chain method; schema 1 records
    without them were float64 runs with parallel chains (the only kind before the GPU work)."""
    record = {"kind": "run", **record, "schema_version": 2}
    if record["kind"] == "run":
        record = {"precision": "float64", "chain_method": "parallel", **record}
    return record


# The Stan front end of a schema-2 record, from the interface its engine_info names.
_V2_STAN_FRONT_ENDS = {"httpstan": "bundled", "cmdstanpy": "cmdstan", "pystan": "pystan"}
_V2_JAX_FRONT_ENDS = {"numpyro": "numpyro", "blackjax_nuts": "blackjax", "blackjax_chees": "blackjax"}


def _v2_to_v3(record: dict) -> dict:
    """Schema 3 names every run's front end (schema 2 kept it in engine_info's ``stan_interface``; a failed Stan
    run without one: "unknown"), gives every run a ``study`` ("" for campaigns) and ``sizes`` (schema 2 wrote
    them for completed runs only: None for the others, never re-derived from today's presets), keeps two clocks
    (``user_s``, ``sampler_s``: see ``_v2_clocks``) and drops the per-run cold ESS/s (the report charges each
    repeat its group's uncached compile time instead)."""
    record = {**record, "schema_version": 3}
    if record.get("kind") != "run":
        return record
    info = record.get("engine_info") or {}
    front_end = (
        _V2_STAN_FRONT_ENDS.get(info.get("stan_interface"), "unknown")
        if record["engine"] == "stan"
        else _V2_JAX_FRONT_ENDS.get(record["engine"], record["engine"])
    )
    record = {"study": "", "sizes": None, "front_end": front_end, **record}
    if isinstance(record.get("metrics"), dict):
        record["metrics"] = {k: v for k, v in record["metrics"].items() if k != "ess_per_s_cold"}
    timings = record.get("timings")
    if isinstance(timings, dict) and "run_s" in timings:
        record["timings"] = _v2_clocks(timings, record["engine"])
    return record


def _v2_clocks(timings: dict, engine: str) -> dict:
    """Schema 2's ``run_s`` was the user clock already (Stan: the sample call's wall; JAX: warmup and sampling to
    block_until_ready, the host copy left out). Stan's sampler clock follows from the per-chain elapsed times the
    record kept, as :func:`stanjax.runner.engines.stan._stan_split` computes it now; a JAX run's warmup and sampling were
    its sampler clock already. The recorded ms per gradient keeps its meaning (see ``runner.metrics``)."""
    timings = {k: v for k, v in timings.items() if k != "run_s"} | {"user_s": timings["run_s"]}
    detail = timings.get("detail") or {}
    if engine == "stan" and detail.get("chain_warmup_s"):
        warmup, sampling = detail["chain_warmup_s"], detail["chain_sampling_s"]
        sampler_s = max(w + s for w, s in zip(warmup, sampling))
        share = sum(warmup) / (sum(warmup) + sum(sampling))
        timings |= {"warmup_s": sampler_s * share, "sampling_s": sampler_s * (1 - share)}
    return timings | {"sampler_s": timings["warmup_s"] + timings["sampling_s"]}


def _v3_to_v4(record: dict) -> dict:
    """Schema 4 says what each run was given: ``cores`` (the worker's pinned cores; None before runs were pinned)
    and Stan's ``threads_per_chain`` (1 for every earlier run: there were no threaded programs)."""
    if record.get("kind") != "run":
        return {**record, "schema_version": 4}
    return {**record, "schema_version": 4, "threads_per_chain": 1, "cores": None}


def _v4_to_v5(record: dict) -> dict:
    """Schema 5 keeps each parameter's posterior sd and the MCSE of that sd (the reference gate checks the spread
    as well as the mean); earlier runs did not record them: empty."""
    if record.get("kind") != "run" or not record.get("metrics"):
        return {**record, "schema_version": 5}
    return {
        **record,
        "schema_version": 5,
        "metrics": {**record["metrics"], "posterior_sd": {}, "posterior_mcse_sd": {}},
    }


def _v5_to_v6(record: dict) -> dict:
    """Schema 6 records the superchains a run's chains started in and its nested R-hat (many-chain runs are judged
    by it, Margossian et al. 2024); every earlier run started each chain apart: no superchains, no nested R-hat."""
    if record.get("kind") != "run" or not record.get("metrics"):
        return {**record, "schema_version": 6}
    return {**record, "schema_version": 6, "metrics": {**record["metrics"], "superchains": 0, "max_rhat_nested": None}}


# Upgrades, one step each: a record of version v goes through MIGRATIONS[v], MIGRATIONS[v + 1], ... Files are
# never rewritten (history is append-only); records are upgraded as they are read.
MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6}


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


# Versions recorded in every provenance, and compared between two record sets.
PACKAGES = (
    "jax",
    "jaxlib",
    "numpyro",
    "blackjax",
    "optax",
    "pystan",
    "httpstan",
    "cmdstanpy",
    "arviz",
    "arviz-stats",
    "numpy",
)


class RecordsError(UsageError):
    """A results file that cannot be read as records of this schema."""


class Machine(msgspec.Struct, kw_only=True):
    """CPU model, cores (all, and those usable by the run), memory and any NVIDIA GPU (nvidia-smi's name, driver,
    memory): enough to tell two machines apart."""

    hostname: str = ""
    cpu: str = ""
    cores: int | None = None
    cores_usable: int | None = None  # None: recorded before runs were pinned to some cores
    memory_gib: float | None = None
    gpu: list[str] = []
    os: str = ""

    @property
    def slug(self) -> str:
        """A short, stable name: its GPU (else CPU) model and its cores, e.g. "xeon-2core", "h100-80gb-hbm3-16core".
        Folders of results/ and every grouping of records use it."""
        name = (self.gpu or [self.cpu or ""])[0].split(",")[0].lower()
        name = re.sub(r"\((r|tm)\)|\b(cpu|processor|nvidia|intel|amd|genuine)\b|@.*", " ", name)
        slug = "-".join(re.findall(r"[a-z0-9]+", name))[:32].strip("-") or "cpu"
        return f"{slug}-{self.cores}core"


class Provenance(msgspec.Struct, kw_only=True):
    """Versions, machine and git state, shared by every record of a campaign."""

    machine: Machine
    versions: dict[str, str | None]
    git_commit: str | None
    git_dirty: bool | None
    command: str
    glibc_tunables: str | None = None  # None: made before the runner fixed glibc's malloc thresholds


class RunTimings(msgspec.Struct, kw_only=True):
    """Seconds of a completed run on the two clocks every engine keeps (:class:`stanjax.runner.engines.Timings`):
    ``user_s``, data handed over to draws in host arrays (the ESS/s denominator), and ``sampler_s`` = ``warmup_s``
    + ``sampling_s``, the sampler's own computation; compilation in neither (``compile_s``)."""

    compile_s: float
    warmup_s: float
    sampling_s: float
    sampler_s: float
    user_s: float
    compile_cached: bool = False
    source: str = ""
    detail: dict[str, Any] = {}


class RunMetrics(msgspec.Struct, kw_only=True):
    """What :func:`stanjax.runner.metrics.summarise` computes from the draws: the one diagnostics path for all engines."""

    n_parameters: int
    min_ess_bulk: float
    min_ess_tail: float
    worst_parameter: str | None
    max_rhat: float
    divergences: int
    ess_per_s: float
    gradients_sampling: int
    gradients_warmup: int | None
    ms_per_gradient: float
    ess_per_1000_gradients: float
    mean_leapfrog_per_draw: float
    posterior_mean: dict[str, float]
    posterior_mcse: dict[str, float]
    posterior_sd: dict[str, float]
    posterior_mcse_sd: dict[str, float]
    # Pareto k-hat of each parameter's draws (both tails; NaN for non-finite or constant draws): the reference gate
    # checks an sd only below runner.validity.KHAT_SD_MAX. Empty in records made before it was kept.
    posterior_khat: dict[str, float] = {}
    # The superchains the chains started in (0: each chain from its own point) and, with superchains, the largest
    # nested R-hat over the parameters (None without).
    superchains: int = 0
    max_rhat_nested: float | None = None


class MachineLoad(msgspec.Struct, kw_only=True):
    """Other work on the machine during a run: the cores other processes kept busy on average (None where
    /proc/stat is unreadable), the 1-minute load average at start and end, and the flag the report shows."""

    other_processes_cores: float | None
    load_average_start: float
    load_average_end: float
    loaded: bool


class SourceEnergy(msgspec.Struct, kw_only=True):
    """What one power source measured over a run's metered span (:mod:`stanjax.runner.energy`): joules and mean watts
    (joules ÷ the span's seconds) from the readings it gave, or ``missing``, why it gave none (a missing sensor is
    never recorded as 0 J); a GPU's peak memory in use, every process's, as NVML reports it."""

    joules: float | None
    mean_watts: float | None
    samples: int
    missing: str = ""
    peak_memory_mib: float | None = None


class RunEnergy(msgspec.Struct, kw_only=True):
    """The energy of a run's metered ``span`` (named in words: which calls it covers) of ``wall_s`` seconds, per
    power source (GPUs through NVML, CPU packages through RAPL); and the worker's peak resident host memory over
    its life, or its largest finished child's where larger (Stan's chains are forked children)."""

    span: str
    wall_s: float
    sources: dict[str, SourceEnergy]
    peak_host_memory_mib: float | None


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
    ran on); read back through :func:`read`, which upgrades older schemas (:data:`MIGRATIONS`) and refuses what
    does not fit this type. Fields added with a default (``core_ids``, ``energy``, ``load``) need no new schema
    version: an older record reads as not having measured them, and an older stanjax ignores them."""

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
    # The instruction set both sides were built for (``runner.config.ISAS``); "": recorded before the runner chose
    # one (bundled Stan then built for baseline x86-64, SSE2; XLA for the host).
    isa: str = ""
    config: RunConfig
    config_hash: str
    sampler_seed: int | None = None
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
        return self.provenance.machine.slug

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
    entropy) only the first is kept, so intervals come from independent seeds only."""
    seen, kept = set(), []
    for r in runs:
        if r.status == "ok" and r.sampler_seed is not None:
            key = (r.measurement_key(), r.sampler_seed)
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


def _run(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=True, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


@cache
def machine() -> Machine:
    """This machine, as records name it."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = None
    try:
        memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    gpu = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    return Machine(
        hostname=platform.node(),
        cpu=cpu,
        cores=os.cpu_count(),
        # The cores this process may run on: fewer than `cores` when runs were pinned (taskset).
        cores_usable=len(os.sched_getaffinity(0)),
        memory_gib=memory_gib,
        gpu=gpu.splitlines() if gpu else [],
        os=platform.platform(),
    )


@cache
def provenance() -> Provenance:
    """Versions, machine and git state, shared by every record of a campaign."""
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    commit = _run(["git", "rev-parse", "HEAD"])
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    if commit is None and os.environ.get("STANJAX_GIT_COMMIT"):  # a Docker image: no .git, the commit built in
        commit, dirty = os.environ["STANJAX_GIT_COMMIT"], os.environ.get("STANJAX_GIT_DIRTY", "")
    return Provenance(
        machine=machine(),
        versions=versions,
        git_commit=commit,
        git_dirty=bool(dirty) if dirty is not None else None,
        command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        glibc_tunables=worker_env()["GLIBC_TUNABLES"],
    )


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
    on a line of its own and the torn one stays alone, skipped by the reader."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(to_builtins(record), sort_keys=True, allow_nan=True) + "\n"
    with open(path, "a+b") as handle:
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                line = "\n" + line
        handle.write(line.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


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


def _read_file(file: Path) -> tuple[list[RunRecord], list[dict]]:
    """The runs and the measurements of one ``.jsonl`` file. A line that is not a JSON object (torn, corrupted),
    a run that does not fit :class:`RunRecord`, or a record of a schema this stanjax cannot read is skipped, with
    one warning per file naming the lines and why; only a file whose records are all of another schema is refused
    (it is history this stanjax cannot read, not damage)."""
    data = gzip.decompress(file.read_bytes()) if file.suffix == ".gz" else file.read_bytes()
    lines = data.decode("utf-8", errors="replace").splitlines()
    runs, measurements = [], []
    skipped, invalid, foreign = [], [], {}
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
    if foreign and not (runs or measurements or skipped or invalid):
        number, err = next(iter(foreign.values()))[0]
        raise RecordsError(f"{file}:{number}: {err}")
    problems = []
    if skipped:
        problems.append("a torn last line" if skipped == [len(lines)] else f"unreadable line(s) {skipped[:10]}")
    problems += [f"line {number}, not a run record: {why}" for number, why in invalid[:10]]
    problems += [
        f"{len(found)} record(s) of schema_version {version} (lines {[n for n, _ in found][:10]}; this "
        f"stanjax reads {SCHEMA_VERSION} and upgrades {', '.join(map(str, MIGRATIONS))})"
        for version, found in foreign.items()
    ]
    if problems:
        warnings.warn(f"{file}: skipped {'; '.join(problems)}", stacklevel=3)
    return runs, measurements


def read(path: Path | list[Path]) -> list[RunRecord]:
    """The run records of one ``.jsonl`` file, of every ``*.jsonl`` below a folder (sorted by path), or of a list
    of files and folders."""
    return [run for file in _files(path) for run in _read_file(file)[0]]


def read_measurements(path: Path | list[Path]) -> list[dict]:
    """The studies' measurements that are not sampler runs (RWMH, sharded gradients), as dicts."""
    return [m for file in _files(path) for m in _read_file(file)[1]]
