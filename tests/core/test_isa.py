"""Both sides built for the same instruction set (``Placement.isa``): Stan's module holds AVX instructions when
built for the host (on a host with AVX2) and none when built for x86-64-v2; a changed flag is another cache entry;
XLA's code for x86-64-v2 holds no AVX either; every engine's record names its flags."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from stanjax import models
from stanjax.models import ROOT
from stanjax.runner.core import isa
from stanjax.runner.core.config import ISAS
from stanjax.runner.engines.stan_bundled import HttpstanBackend
from stanjax.runner.engines.stan_cmdstan import CmdStanBackend
from stanjax.runner.measure.jobs import WORKER_PYTHON

EIGHT_SCHOOLS = models.get("eight_schools-eight_schools_noncentered")
HOST_HAS_AVX2 = "avx2" in isa.host_features().split(", ")
# An AVX instruction: one naming a 256- or 512-bit register, or a VEX/EVEX-encoded one (mnemonic v..., which
# the legacy SSE encodings never start with).
# The builds whose Stan modules the tests compile (each costs a minute or more). x86-64-v3 is the same
# mechanism with other flags; its Stan build is not compiled here, its XLA side is.
STAN_BUILT_HERE = ("native", "x86-64-v2")
AVX = re.compile(r"%[yz]mm\d|^\s*[0-9a-f]+:\s+v[a-z0-9]+\s", re.MULTILINE)
AVX512 = re.compile(r"%zmm\d|%k[1-7]\b")  # a 512-bit or mask register: only AVX-512 code names one


def avx_instructions(objects: list[Path], pattern: re.Pattern = AVX) -> int:
    """How many instructions of ``objects``' disassembly (objdump -d) are AVX ones (or match ``pattern``)."""
    return sum(
        len(
            pattern.findall(
                subprocess.run(
                    ["objdump", "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True, check=True
                ).stdout
            )
        )
        for path in objects
    )


def test_host_features_come_from_cpuinfo_flags(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 sse4_2 avx avx2 fma bmi2\n")
    assert isa.host_features(cpuinfo) == "sse4_2, avx, avx2, fma"
    assert isa.host_features(tmp_path / "absent") == "unknown"


def test_each_isa_is_its_own_httpstan_cache_entry():
    import httpstan.models

    stan_file = EIGHT_SCHOOLS.stan_file
    names = {
        build: httpstan.models.calculate_model_name(HttpstanBackend.program_code(stan_file, build)) for build in ISAS
    }
    plain = httpstan.models.calculate_model_name(EIGHT_SCHOOLS.stan_file.read_text())
    assert len({*names.values(), plain}) == len(ISAS) + 1, names


def test_cmdstan_gets_the_isas_flag_and_main_object_in_its_cache_key():
    code = EIGHT_SCHOOLS.stan_file.read_text()
    assert CmdStanBackend.cpp_options(code, "native") == {
        "CXXFLAGS_OPTIM": "-march=native",
        "CMDSTAN_MAIN_O": "src/cmdstan/main_march-native.o",
    }
    assert CmdStanBackend.cpp_options("reduce_sum", "x86-64-v2") == {
        "CXXFLAGS_OPTIM": "-march=x86-64-v2",
        "STAN_THREADS": True,
        "CMDSTAN_MAIN_O": "src/cmdstan/main_threads_march-x86-64-v2.o",
    }
    # One main object (CmdStan's NUTS) per ISA and threading, never CmdStan's own, which `make build` compiled
    # without the ISA's flags: a native model linked with it died in NUTS ("double free or corruption").
    mains = {CmdStanBackend.main_object(build, threads) for build in ISAS for threads in (False, True)}
    assert len(mains) == 2 * len(ISAS) and not mains & {"src/cmdstan/main.o", "src/cmdstan/main_threads.o"}


def test_stan_engine_info_names_the_flags_and_the_isa():
    info = HttpstanBackend().info("x86-64-v2")
    assert info["compile_flags"].startswith(
        "-march=x86-64-v2 -fvisibility=hidden -fvisibility-inlines-hidden -g0 (CPPFLAGS) -O3"
    )
    assert info["stan_threads"] is False
    assert (info["isa"], info["host_isa"]) == ("x86-64-v2", isa.host_features())


@pytest.mark.slow
@pytest.mark.stan
def test_stan_module_has_avx_built_for_the_host_and_none_for_x86_64_v2():
    """Both builds are precompiled by ``make test`` (tests/precompile.py)."""
    import httpstan.cache

    cppflags = os.environ.get("CPPFLAGS")
    found = {}
    for build in STAN_BUILT_HERE:
        handle = HttpstanBackend().compile(EIGHT_SCHOOLS.stan_file, build)
        assert handle["isa"] == build
        found[build] = avx_instructions(list(httpstan.cache.model_directory(handle["model_name"]).glob("*.so")))
    assert os.environ.get("CPPFLAGS") == cppflags  # the build's flags did not leak
    assert found["x86-64-v2"] == 0, found
    if not HOST_HAS_AVX2:
        pytest.skip(f"this host has no AVX2 (/proc/cpuinfo: {isa.host_features()}): -march=native adds no AVX")
    assert found["native"] > 0, found


JAX_PROBE = """
import json, os, sys
from stanjax.runner.core.config import Placement
from stanjax.runner.engines.jax_setup import device_info, start_jax

os.environ["XLA_FLAGS"] = "--xla_dump_to=" + sys.argv[2]
placement = Placement(isa=sys.argv[1])
jax = start_jax(placement, 1)
jax.config.update("jax_enable_compilation_cache", False)  # a cache hit compiles (and dumps) nothing
x, b = jax.numpy.ones((1000, 54)), jax.numpy.ones(54)  # a logistic regression's likelihood: dot, log1p, exp
jax.jit(lambda b: jax.numpy.sum(jax.numpy.log1p(jax.numpy.exp(x @ b))))(b).block_until_ready()
try:
    start_jax(Placement(isa="x86-64-v2"), 1)
    late = "accepted"
except RuntimeError as err:
    late = str(err)
print(json.dumps({**device_info(jax, placement, 1), "late_limit": late}))
"""


@pytest.mark.slow
def test_xla_code_has_avx_for_the_host_and_none_capped_at_sse4_2(tmp_path):
    found, infos = {}, {}
    for build in ISAS:
        dump = tmp_path / build
        done = subprocess.run(
            [WORKER_PYTHON, "-c", JAX_PROBE, build, str(dump)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "JAX_PLATFORMS": "cpu"},
        )
        assert done.returncode == 0, done.stderr
        infos[build] = json.loads(done.stdout.splitlines()[-1])
        objects = list(dump.glob("*jit__lambda*.o"))
        assert objects, sorted(p.name for p in dump.iterdir())
        found[build] = avx_instructions(objects)
        if build == "x86-64-v3":
            avx512 = avx_instructions(objects, AVX512)
    assert infos["x86-64-v2"]["xla_isa_flag"] == "--xla_cpu_max_isa=SSE4_2"
    assert infos["native"]["xla_isa_flag"].startswith("none")
    assert infos["native"]["isa"] == "native" and infos["native"]["host_isa"] == isa.host_features()
    assert "XLA started before" in infos["native"]["late_limit"]  # too late to cap: refused, not ignored
    assert found["x86-64-v2"] == 0, found
    assert infos["x86-64-v3"]["xla_isa_flag"] == "--xla_cpu_max_isa=AVX2"
    assert avx512 == 0, avx512  # capped at AVX2: no 512-bit register, whatever the host has
    if not HOST_HAS_AVX2:
        pytest.skip(f"this host has no AVX2 (/proc/cpuinfo: {isa.host_features()}): XLA's host code has no AVX")
    assert found["native"] > 0 and found["x86-64-v3"] > 0, found
