"""The CPU instruction set both sides are built for (``Placement.isa``): one place for the flags each side gets.

Left alone, the two sides are not built alike: httpstan compiles Stan programs with -O3 and no -march (baseline
x86-64, SSE2: no AVX instruction in a model's module), while XLA compiles for the host (AVX2, FMA, AVX-512). So
Stan is built for the same ISA as XLA: "native" is the host's (Stan with -march=native, XLA's default);
"x86-64-v3" is AVX2 and FMA without AVX-512 on both (Stan with -march=x86-64-v3, XLA's CPU ISA capped at AVX2): on
the borrowed GPU box's AVX-512 Xeon every Stan chain built with -march=native died at once of a segmentation fault
(2026-11-26; on AVX2 hosts native runs); "x86-64-v2" is SSE4.2 without AVX on both (Stan with -march=x86-64-v2,
XLA's CPU ISA capped at SSE4.2).
"""

from __future__ import annotations

from pathlib import Path

STAN_FLAGS = {"native": "-march=native", "x86-64-v3": "-march=x86-64-v3", "x86-64-v2": "-march=x86-64-v2"}
# XLA_FLAGS entry per ISA; None: XLA's default, the host's ISA.
XLA_FLAGS = {"native": None, "x86-64-v3": "--xla_cpu_max_isa=AVX2", "x86-64-v2": "--xla_cpu_max_isa=SSE4_2"}
# The --isa help of the commands that take it.
ISA_HELP = (
    "the CPU instruction set both sides are built for: native (the host's: Stan with -march=native, XLA's "
    "default), x86-64-v3 (AVX2 and FMA, no AVX-512: Stan with -march=x86-64-v3, XLA's CPU ISA capped at AVX2; "
    "for hosts where a native Stan build crashes) or x86-64-v2 (SSE4.2, no AVX: Stan with -march=x86-64-v2, "
    "XLA's CPU ISA capped at SSE4.2). The record states it (default: %(default)s)"
)
# The /proc/cpuinfo features that tell the ISA levels apart, in the order they came.
HOST_FEATURES = ("sse4_2", "avx", "avx2", "fma", "avx512f")


def stan_flags(isa: str) -> str:
    """The C++ compiler flags a Stan program gets for ``isa``."""
    return STAN_FLAGS[isa]


def xla_flag(isa: str) -> str | None:
    """The XLA_FLAGS entry for ``isa`` (None for the host's)."""
    return XLA_FLAGS[isa]


def host_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The host's ISA features among ``HOST_FEATURES``, e.g. "sse4_2, avx, avx2, fma, avx512f"; "unknown" where
    /proc/cpuinfo cannot be read (not Linux)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return "unknown"
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return ", ".join(feature for feature in HOST_FEATURES if feature in flags)


def info(isa: str) -> dict:
    """What every engine's record says about the ISA: the one it was built for and the host's features."""
    return {"isa": isa, "host_isa": host_features()}
