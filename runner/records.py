"""Result records: one JSON object per run, appended to ``<out>/results.jsonl`` with provenance.

Appends are flushed and fsync'ed one record at a time, so a killed campaign keeps every finished run. The
reader keeps every intact record: a line that is not a JSON object (a torn last line, a corrupted line) is
skipped with a warning; a file with lines but no readable record, or a record of another schema, is refused.
"""

from __future__ import annotations

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

from models import ROOT, UsageError

SCHEMA_VERSION = 2
RESULTS_FILE = "results.jsonl"
# glibc's malloc: fixed thresholds (16 MiB before a block is mmapped, 128 MiB free before the heap is trimmed) for
# every worker and what it starts. With glibc's adaptive defaults a process's allocator depends on what it had
# allocated before: a fresh CmdStan spent ~20 % of its time in page faults on Bradley-Terry at 20k matches
# (3 M minor faults in 600 iterations), while bundled Stan's chains, forked from a worker that had imported arviz,
# had almost none. A GLIBC_TUNABLES set by the user is kept.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=16777216:glibc.malloc.trim_threshold=134217728"


def worker_env() -> dict[str, str]:
    """The environment of every worker process (runs and study measurements)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1",
            "GLIBC_TUNABLES": os.environ.get("GLIBC_TUNABLES", MALLOC_TUNABLES)}


def _v1_to_v2(record: dict) -> dict:
    """Schema 2 names every record's kind and every run's precision and chain method; schema 1 records
    without them were float64 runs with parallel chains (the only kind before the GPU work)."""
    record = {"kind": "run", **record, "schema_version": 2}
    if record["kind"] == "run":
        record = {"precision": "float64", "chain_method": "parallel", **record}
    return record


# Upgrades, one step each: a record of version v goes through MIGRATIONS[v], MIGRATIONS[v + 1], ... Files are
# never rewritten (history is append-only); records are upgraded as they are read.
MIGRATIONS = {1: _v1_to_v2}


def migrate(record: dict) -> dict:
    """The record in the current schema, or RecordsError for a version this stanjax cannot read."""
    version = record["schema_version"]
    while version != SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise RecordsError(f"schema_version {version!r}, this stanjax reads {SCHEMA_VERSION} "
                               f"(and upgrades {', '.join(map(str, MIGRATIONS))})")
        record = MIGRATIONS[version](record)
        version = record["schema_version"]
    return record
PACKAGES = ("jax", "jaxlib", "numpyro", "blackjax", "optax", "pystan", "httpstan", "cmdstanpy", "arviz",
            "arviz-stats", "numpy")


class RecordsError(UsageError):
    """A results file that cannot be read as records of this schema."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _run(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=True, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


@cache
def machine() -> dict:
    """CPU model, cores (all, and those usable here), memory and any NVIDIA GPU: enough to tell two machines apart."""
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
    return {
        "hostname": platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        # The cores this process may run on: fewer than `cores` when runs were pinned (taskset) beside others.
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_gib": memory_gib,
        "gpu": gpu.splitlines() if gpu else [],
        "os": platform.platform(),
    }


def machine_slug(machine: dict) -> str:
    """A short, stable name for a machine: its GPU (else CPU) model and its cores, e.g. "xeon-2core",
    "h100-80gb-hbm3-16core". Folders of results/ and the report's pairings use it."""
    name = (machine.get("gpu") or [machine.get("cpu") or ""])[0].split(",")[0].lower()
    name = re.sub(r"\((r|tm)\)|\b(cpu|processor|nvidia|intel|amd|genuine)\b|@.*", " ", name)
    slug = "-".join(re.findall(r"[a-z0-9]+", name))[:32].strip("-") or "cpu"
    return f"{slug}-{machine.get('cores')}core"


@cache
def provenance() -> dict:
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
    return {
        "machine": machine(),
        "versions": versions,
        "git_commit": commit,
        "git_dirty": bool(dirty) if dirty is not None else None,
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "glibc_tunables": worker_env()["GLIBC_TUNABLES"],
    }


def measurement(study: str, fields: dict) -> dict:
    """A study measurement that is not a sampler run, with the same provenance as a run record."""
    return {"schema_version": SCHEMA_VERSION, "kind": "measurement", "study": study, "created": now(),
            "provenance": provenance(), **fields}


def measurement_device(measurement: dict) -> str:
    """Where a study measurement ran: "cpu" or "gpu" (measurements made before the field existed: JAX ran where
    the study's --device said, NumPy on the CPU)."""
    if "device" in measurement:
        return measurement["device"]
    on_gpu = measurement.get("backend") == "jax" and "--device gpu" in measurement["provenance"]["command"]
    return "gpu" if on_gpu else "cpu"


def append(path: Path, record: dict) -> None:
    """Append one record as a JSON line, durable before returning."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, allow_nan=True) + "\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def read(path: Path, kind: str = "run") -> list[dict]:
    """Records of one ``.jsonl`` file, or of every ``*.jsonl`` below a folder (sorted by path).

    ``kind`` "run" gives sampler runs; "measurement" gives the studies' other measurements (RWMH, sharded
    gradients), which carry ``"kind": "measurement"``."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.rglob("*.jsonl"))
    elif path.exists():
        files = [path]
    else:
        raise RecordsError(f"no results at {path}")
    records = []
    for file in files:
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        skipped, foreign, kept = [], {}, 0
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not isinstance(record, dict) or "schema_version" not in record:
                skipped.append(number)
                continue
            try:
                record = migrate(record)
            except RecordsError as err:
                foreign.setdefault(repr(record["schema_version"]), (number, err))
                continue
            kept += 1
            if record.get("kind", "run") == kind:
                records.append(record)
        if not kept and foreign:
            number, err = next(iter(foreign.values()))
            raise RecordsError(f"{file}:{number}: {err}")
        if not kept and skipped:
            raise RecordsError(f"{file}: no readable record ({len(skipped)} unreadable line(s))")
        if skipped or foreign:
            what = "a torn last line" if skipped == [len(lines)] and not foreign else \
                f"unreadable line(s) {skipped[:10]}" + (f", other schema versions {list(foreign)}" if foreign else "")
            warnings.warn(f"{file}: skipped {what}", stacklevel=2)
    return records
