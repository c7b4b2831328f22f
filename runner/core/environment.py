"""Where and with what a run was made, as its record states it: this machine (:class:`Machine`, whose slug names
results/ folders and groups records), the package versions, git state and command shared by every record of a
campaign (:class:`Provenance`), and the environment every worker process gets (:func:`worker_env`: glibc's malloc
thresholds fixed, as the provenance records).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import msgspec

from stanjax.models import ROOT

# glibc's malloc: fixed thresholds (16 MiB before a block is mmapped, 128 MiB free before the heap is trimmed) for
# every worker and what it starts. With glibc's adaptive defaults a process's allocator depends on what it had
# allocated before: a fresh CmdStan spent ~20 % of its time in page faults on Bradley-Terry at 20k matches
# (3 M minor faults in 600 iterations), while bundled Stan's chains, forked from a worker that had imported arviz,
# had almost none. A GLIBC_TUNABLES set by the user is kept.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=16777216:glibc.malloc.trim_threshold=134217728"


def worker_env() -> dict[str, str]:
    """The environment of every worker process (runs and study measurements)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", "GLIBC_TUNABLES": os.environ.get("GLIBC_TUNABLES", MALLOC_TUNABLES)}


def run_module(module: str, args: list[str], env: dict | None = None, timeout_s: float = 3600):
    """``python -m module args`` in a child process of the checkout, with the workers' environment and ``env``:
    the measurements that need a fresh process (JAX's device count and precision are fixed when it starts)."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**worker_env(), **(env or {})},
    )


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


class Machine(msgspec.Struct, kw_only=True):
    """CPU model, cores (all, and those usable by the run), memory and any NVIDIA GPU (nvidia-smi's name, driver,
    memory), and the CPU's identity beyond its name (``cpu_id``: family, model, stepping, microcode, a hash of its
    flags and the vector extensions among them) with the kernel: enough to tell two machines apart. One slug
    ("xeon-2core") covered a Xeon with AVX-512 and one without; ``fingerprint`` tells them apart."""

    hostname: str = ""
    cpu: str = ""
    cores: int | None = None
    cores_usable: int | None = None  # None: recorded before runs were pinned to some cores
    memory_gib: float | None = None
    gpu: list[str] = []
    os: str = ""
    cpu_id: dict[str, str] = {}  # empty: recorded before 2026-11-27
    kernel: str = ""

    @property
    def label(self) -> str:
        """What records are grouped and paired by: the slug, with the fingerprint where the record has one
        ("epyc-2core-cb44675b"); folders of results/ keep the slug."""
        return f"{self.slug}-{self.fingerprint}" if self.fingerprint else self.slug

    @property
    def fingerprint(self) -> str:
        """8 hex digits from the CPU's name, identity and flags and the cores ("" for records without
        ``cpu_id``): equal for two VMs of one CPU, which only a calibration can tell apart."""
        if not self.cpu_id:
            return ""
        text = json.dumps([self.cpu, self.cores, self.cpu_id], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:8]

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


def _run(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=True, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


# The vector extensions a record names outright (the rest of the flags enter a hash): where XLA's and Stan's
# native builds differ between two CPUs of one name.
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile")


def cpu_identity(cpuinfo: str) -> tuple[str, dict[str, str]]:
    """The first CPU's model name and its identity from /proc/cpuinfo's text: family, model, stepping,
    microcode (where the kernel shows them), the vector extensions of ``VECTOR_FLAGS`` it has, a hash of every
    flag."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            break  # the first processor's block
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    identity = {
        key.replace("cpu ", ""): fields[key]
        for key in ("cpu family", "model", "stepping", "microcode")
        if key in fields
    }
    flags = fields.get("flags", "").split()
    if flags:
        identity["vector"] = " ".join(flag for flag in VECTOR_FLAGS if flag in flags)
        identity["flags_sha"] = hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:12]
    return fields.get("model name", ""), identity


def same_machine(recorded: Machine, here: Machine) -> bool:
    """Whether a record's machine is ``here``: by label, or by slug for a record made before fingerprints."""
    return recorded.label == here.label if recorded.fingerprint else recorded.slug == here.slug


@cache
def machine() -> Machine:
    """This machine, as records name it."""
    cpu = platform.processor() or platform.machine()
    cpu_id: dict[str, str] = {}
    try:
        name, cpu_id = cpu_identity(Path("/proc/cpuinfo").read_text())
        cpu = name or cpu
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
        cpu_id=cpu_id,
        kernel=platform.release(),
    )


def command_line() -> str:
    """This process's command, as a record or a folder's lock names it (``stanjax run --suite quick``)."""
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])


@cache
def provenance() -> Provenance:
    """Versions, machine and git state, shared by every record of a campaign."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
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
        command=command_line(),
        glibc_tunables=worker_env()["GLIBC_TUNABLES"],
    )
