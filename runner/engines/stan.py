"""The Stan engine: bundled Stan (httpstan's compiled NUTS) by default, CmdStan through cmdstanpy when one is found.

Both back ends run Stan's own NUTS with diagonal-metric adaptation, one process per chain. Two clocks, as for
every engine: ``user_s`` is the wall time of the sample call, data handed over to draws in NumPy arrays (forking
or starting the chains, sending the data, writing and parsing every draw); the sampler's own time is Stan's: the
chains start together, so the slowest chain's elapsed warmup + sampling, split into warmup and sampling in the
ratio of the per-chain elapsed times summed over chains (with more chains than cores the chains share cores, so
one chain's split alone would not do). Stan's per-chain clocks are kept in ``detail``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import re
import select
import socket
import subprocess
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import orjson

from stanjax.models import ModelSpec, UsageError
from stanjax.runner import isa as isas
from stanjax.runner.config import Placement, RunConfig
from stanjax.runner.engines import SampleResult, SamplerStats, Timings
from stanjax.runner.paths import cache_dir

ELAPSED_RE = re.compile(r"([0-9.eE+-]+) seconds \((Warm-up|Sampling)\)")
# reduce_sum's grainsize for the threaded programs: 1 lets TBB's scheduler size the slices (the Stan User's Guide's
# starting point, and the one setting that suits every model and size).
GRAINSIZE = 1


def program(spec: ModelSpec, placement: Placement) -> Path:
    """The program a placement runs: the model's reduce_sum one with more than one thread per chain."""
    if placement.threads_per_chain > 1:
        if spec.stan_threaded_file is None:
            raise UsageError(f"{spec.id} has no threaded program (stan/threaded/{spec.model_name}.stan)")
        return spec.stan_threaded_file
    return spec.stan_file


def check_program(spec: ModelSpec) -> None:
    """Run stanc (bundled with httpstan) on the spec's programs (its threaded one too); raise UsageError with
    stanc's message if one fails."""
    import httpstan.compile

    for stan_file in filter(None, (spec.stan_file, spec.stan_threaded_file)):
        try:
            httpstan.compile.compile(stan_file.read_text(), f"check_{spec.model_name}")
        except ValueError as err:
            lines = [line.strip() for line in str(err).splitlines()]
            message = " ".join(line for line in lines if line and not re.match(r"(\d+:|-+$|\^)", line))
            shown = f"threaded/{stan_file.name}" if stan_file == spec.stan_threaded_file else stan_file.name
            raise UsageError(f"{shown} does not compile: {message}") from None


def find_cmdstan() -> str | None:
    """The CmdStan installation cmdstanpy would use (``CMDSTAN`` or its default folder), or None."""
    try:
        import cmdstanpy

        return cmdstanpy.cmdstan_path()
    except (ValueError, ImportError):
        return None


class StanEngine:
    """Stan through one front end: "bundled" (httpstan's NUTS, driven here) or "cmdstan" (cmdstanpy)."""

    name = "stan"

    def __init__(self, front_end: str = "bundled"):
        if front_end == "cmdstan":
            cmdstan = find_cmdstan()
            if cmdstan is None:
                raise UsageError("CmdStan was asked for, but none is installed (set CMDSTAN)")
            self.backend = CmdStanBackend(cmdstan)
        elif front_end == "bundled":
            self.backend = HttpstanBackend()
        else:
            raise UsageError(f"the Stan engine cannot run through the {front_end!r} front end")

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        return self.backend.compile(program(spec, placement), placement.isa)

    def sample(
        self, handle, data: dict, config: RunConfig, seed: int, placement: Placement = Placement()
    ) -> SampleResult:
        if placement.device != "cpu":
            raise ValueError("Stan runs on the CPU only")
        threads = placement.threads_per_chain
        if threads > 1:
            data = {**data, "grainsize": GRAINSIZE}
        result = self.backend.sample(handle, data, config, seed, threads)
        result.info["threads_per_chain"] = threads
        if threads > 1:
            result.info["grainsize"] = GRAINSIZE
        return result


def _stan_split(
    per_chain: list[dict[str, float]], user_s: float, compile_s: float, cached: bool, interface: str, config: RunConfig
) -> Timings:
    """Timings from the sample call's wall (``user_s``) and Stan's per-chain elapsed times. Where every chain was
    faster than Stan's clock (it reports milliseconds: 0 for a one-parameter model's tiny run), the sampler time
    is the call's wall, split in the ratio of warmup to sampling iterations, and the source says so."""
    sampler_s = max(c["warmup"] + c["sampling"] for c in per_chain)
    warmup = sum(c["warmup"] for c in per_chain)
    total = warmup + sum(c["sampling"] for c in per_chain)
    source = (
        f"user: {interface} sample-call wall, data in to draws in arrays; sampler: the slowest chain's "
        "elapsed warmup + sampling by Stan's clock, split in the ratio of the chains' summed elapsed times"
    )
    if total > 0:
        warmup_share = warmup / total
    else:
        sampler_s, warmup_share = user_s, config.warmup / (config.warmup + config.draws)
        source = (
            f"user and sampler: {interface} sample-call wall (Stan's clock read 0 ms for every chain), "
            "split in the ratio of warmup to sampling iterations"
        )
    return Timings(
        compile_s=compile_s,
        warmup_s=sampler_s * warmup_share,
        sampling_s=sampler_s * (1 - warmup_share),
        user_s=user_s,
        source=source,
        compile_cached=cached,
        detail={
            "chain_warmup_s": [c["warmup"] for c in per_chain],
            "chain_sampling_s": [c["sampling"] for c in per_chain],
        },
    )


class HttpstanBackend:
    """Bundled Stan: the NUTS of httpstan's compiled model module, one forked process per chain.

    httpstan (the server inside pystan 3) compiles each program with -O3 into a Python extension whose
    ``hmc_nuts_diag_e_adapt_wrapper`` runs ``stan::services::sample::hmc_nuts_diag_e_adapt`` and streams JSON lines
    to a Unix socket. pystan drives that call through an in-process HTTP server that polls progress, compresses
    every message and runs at most one chain per core: on 2 cores that cost 1.3-1.5x CmdStan's wall time. Here the
    same call with the same arguments (so the same draws, tested against pystan) runs every chain at once in its
    own forked process, as cmdstanpy does, and one blocking ``select`` reads the sockets.
    """

    FUNCTION = "hmc_nuts_diag_e_adapt"
    # httpstan's own compile arguments for a model's module (httpstan/models.py), after setuptools' flags.
    HTTPSTAN_ARGS = "-O3 -std=c++17 -Wno-sign-compare"

    def info(self, isa: str = "native") -> dict:
        import httpstan

        return {
            "stan_interface": "httpstan",
            "pystan": metadata.version("pystan"),
            "httpstan": httpstan.__version__,
            "stan_version": _httpstan_stan_version(),
            "compile_flags": f"{isas.stan_flags(isa)} (CPPFLAGS) {self.HTTPSTAN_ARGS} (httpstan's)",
            **isas.info(isa),
            "chain_processes": "one forked process per chain, all at once",
            "dtype": "float64",
        }

    @staticmethod
    def program_code(stan_file: Path, isa: str) -> str:
        """The program text httpstan builds for ``isa``: the program with a comment naming the flags appended.
        httpstan's cache key (``calculate_model_name``) hashes the text, not the compiler flags, so the comment
        makes each build of a program its own cache entry. ``stan.build`` of this text, once ``compile`` has
        built it, finds the same module in the cache."""
        return f"{stan_file.read_text()}\n// stanjax: built with {isas.stan_flags(isa)}, its stan_services.o too\n"

    def compile(self, stan_file: Path, isa: str = "native"):
        """Build through pystan's in-process httpstan, with the ISA's flags appended to CPPFLAGS meanwhile
        (``_appended_cppflags``); its model cache is keyed by ``program_code``."""
        import asyncio

        import httpstan.cache
        import httpstan.models
        import stan.common

        code = self.program_code(stan_file, isa)
        name = httpstan.models.calculate_model_name(code)
        cached = name in httpstan.cache.list_model_names()

        async def build():
            async with stan.common.HttpstanClient() as client:
                resp = await client.post("/models", json={"program_code": code})
                if resp.status != 201:
                    raise RuntimeError(f"{stan_file.name} failed to compile: {resp.json()['message']}")

        start = time.perf_counter()
        with _appended_cppflags(isas.stan_flags(isa)), _services_built_with(isas.stan_flags(isa)):
            asyncio.run(build())
        return {
            "model_name": name,
            "program_code": code,
            "isa": isa,
            "compile_s": time.perf_counter() - start,
            "cached": cached,
        }

    def sample(self, handle, data: dict, config: RunConfig, seed: int, threads: int = 1) -> SampleResult:
        import httpstan.models

        start = time.perf_counter()
        module = httpstan.models.import_services_extension_module(handle["model_name"])
        outputs = _run_chains(module, nuts_arguments(module, data, config, seed), config.chains, threads)
        tables = [sample_table(output, config.draws) for output in outputs]
        columns = tables[0][0]
        values = np.stack([table for _, table in tables])  # (chains, draws, columns)
        draws = group_columns(columns, values)
        user_s = time.perf_counter() - start
        column = {name: i for i, name in enumerate(columns)}
        stats = SamplerStats(
            n_leapfrog=values[..., column["n_leapfrog__"]].astype(np.int64),
            divergent=values[..., column["divergent__"]].astype(bool),
            step_size=[float(s) for s in values[:, 0, column["stepsize__"]]],
        )
        per_chain = [_parse_elapsed(output) for output in outputs]
        timings = _stan_split(per_chain, user_s, handle["compile_s"], handle["cached"], "httpstan", config)
        info = self.info(handle["isa"])
        if threads > 1:
            info["chain_processes"] += f", each pinned to its own {threads} cores (TBB's threads for reduce_sum)"
        return SampleResult(draws, timings, stats, info)


@contextlib.contextmanager
def _appended_cppflags(flags: str):
    """CPPFLAGS with ``flags`` appended, restored after: httpstan builds in this process (pystan's server runs
    in it), and setuptools adds CPPFLAGS to its compile command (CFLAGS and CXXFLAGS would replace Python's
    flags instead). httpstan has no argument for extra flags on that route."""
    before = os.environ.get("CPPFLAGS")
    os.environ["CPPFLAGS"] = f"{before} {flags}" if before else flags
    try:
        yield
    finally:
        if before is None:
            del os.environ["CPPFLAGS"]
        else:
            os.environ["CPPFLAGS"] = before


# httpstan's macros for Stan code (httpstan/models.py), for its services object as for a model.
HTTPSTAN_MACROS = [
    ("BOOST_DISABLE_ASSERTS", None),
    ("BOOST_PHOENIX_NO_VARIADIC_EXPRESSION", None),
    ("STAN_THREADS", None),
    ("_REENTRANT", None),
    ("_GLIBCXX_USE_CXX11_ABI", "0"),
]


@contextlib.contextmanager
def _services_built_with(flags: str):
    """httpstan links every model with its prebuilt ``stan_services.o`` (NUTS, the writers), built for baseline
    x86-64. A model built with -march=native beside it is one module whose halves disagree on Eigen's alignment
    (AVX: 32 bytes): chains died with "double free or corruption" in NUTS's build_tree on Bradley-Terry, the
    mixture and the S&P 500. So meanwhile httpstan builds from a package folder whose ``stan_services.o`` was
    compiled with the model's flags (``services_folder``)."""
    import httpstan.models

    before = httpstan.models.PACKAGE_DIR
    httpstan.models.PACKAGE_DIR = services_folder(flags)
    try:
        yield
    finally:
        httpstan.models.PACKAGE_DIR = before


def services_folder(flags: str) -> Path:
    """A stand-in for httpstan's package folder, in httpstan's cache (its model modules' rpath points into it):
    links to its ``include`` and ``lib``, and its ``stan_services.cpp`` compiled as httpstan compiles a model,
    with ``flags`` (once per flags and httpstan version; minutes)."""
    import httpstan.cache
    import httpstan.models
    from setuptools._distutils import sysconfig
    from setuptools._distutils.ccompiler import new_compiler

    package = Path(httpstan.models.__file__).parent.resolve()
    folder = httpstan.cache.cache_directory() / "stanjax-services" / hashlib.sha256(flags.encode()).hexdigest()[:12]
    if (folder / "stan_services.o").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("include", "lib"):
        with contextlib.suppress(FileExistsError):  # another process building the same folder made it
            (folder / name).symlink_to(package / name)
    with tempfile.TemporaryDirectory(dir=folder) as build:
        compiler = new_compiler()
        sysconfig.customize_compiler(compiler)  # Python's flags, and CPPFLAGS, as setuptools builds a model
        [built] = compiler.compile(
            [str(package / "stan_services.cpp")],
            output_dir=build,
            macros=HTTPSTAN_MACROS,
            include_dirs=[str(package / "include"), sysconfig.get_python_inc()],
            extra_postargs=[*HttpstanBackend.HTTPSTAN_ARGS.split(), *flags.split()],
        )
        os.replace(built, folder / "stan_services.o")  # whole or not at all: a killed build leaves none
    return folder


def nuts_arguments(module, data: dict, config: RunConfig, seed: int) -> dict:
    """Keyword arguments of httpstan's NUTS wrapper: httpstan's defaults (CmdStan's, as pystan sends them) with
    the run's settings; ``chain`` is set per process."""
    import httpstan.services.arguments as stan_arguments

    given = {
        "data": data,
        "init": {},
        "random_seed": seed,
        "num_warmup": config.warmup,
        "num_samples": config.draws,
        "delta": config.target_accept,
        "max_depth": config.max_treedepth,
    }
    names = stan_arguments.function_arguments(HttpstanBackend.FUNCTION, module)
    defaults = {
        name: stan_arguments.lookup_default(stan_arguments.Method.SAMPLE, name)
        for name in names
        if name not in given and name not in ("socket_filename", "chain")
    }
    return {**defaults, **given}


def _chain_process(module, socket_path: str, arguments: dict, cores: list[int] | None) -> None:
    """Body of one chain's forked process: pinned to ``cores`` if given (TBB sizes reduce_sum's thread pool from
    them), Stan's sampler, then exit with its return code."""
    if cores:
        os.sched_setaffinity(0, cores)
    try:
        code = getattr(module, f"{HttpstanBackend.FUNCTION}_wrapper")(socket_path, **arguments)
    except Exception as err:  # Stan's C++ exceptions (bad data, failed initialisation) arrive through pybind11
        Path(f"{socket_path}.error").write_text(str(err))
        code = 70
    os._exit(code)


def _refuse_to_fork_with_jax() -> None:
    """Chains are forked, and a process that has loaded JAX must not fork: the child inherits JAX's runtime
    threads' locks, possibly held, and can deadlock. ``jaxlib`` is the test: ``jax`` alone may be the lazy
    placeholder module arviz installs without importing JAX."""
    import sys

    if "jaxlib" in sys.modules:
        raise RuntimeError(
            "bundled Stan forks a process per chain, but this process has loaded JAX (jaxlib is imported), and a "
            "fork after JAX started can deadlock: run Stan in a process that never imports JAX (stanjax runs each "
            "job in its own worker process)"
        )


def _run_chains(module, arguments: dict, chains: int, threads: int = 1) -> list[bytes]:
    """Run every chain at once; per chain, the JSON lines its sample writer and logger sent (the diagnostic
    writer's per-iteration momenta and gradients are read and dropped). With ``threads`` > 1 each chain runs on
    its own ``threads`` of this process's cores. Refused in a process that has loaded JAX (see
    ``_refuse_to_fork_with_jax``)."""
    _refuse_to_fork_with_jax()
    usable = sorted(os.sched_getaffinity(0))
    if threads > 1 and chains * threads > len(usable):
        raise UsageError(
            f"{chains} chains x {threads} threads need {chains * threads} cores, this process has {len(usable)}"
        )
    context = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="stanjax-httpstan-") as folder:
        listeners, processes = {}, []
        for chain in range(1, chains + 1):
            path = f"{folder}/{chain}.sock"
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(4)  # Stan's init, sample and diagnostic writers and its logger
            listeners[listener] = chain
            cores = usable[(chain - 1) * threads : chain * threads] if threads > 1 else None
            process = context.Process(target=_chain_process, args=(module, path, {**arguments, "chain": chain}, cores))
            process.start()
            processes.append(process)
        received: dict[socket.socket, tuple[int, list[bytes]]] = {}
        closed: set[socket.socket] = set()
        dropped: set[socket.socket] = set()
        running = {process.sentinel for process in processes}  # readable once the process has ended
        try:
            while True:
                # A chain that has ended has made all it sent readable (its connections read as closed), so once
                # every chain has ended, nothing readable means nothing left.
                open_sources = [*listeners, *(source for source in received if source not in closed), *running]
                readable = select.select(open_sources, [], [], None if running else 0)[0]
                if not readable:
                    break
                for source in readable:
                    if source in running:
                        running.remove(source)
                        continue
                    if source in listeners:
                        connection, _ = source.accept()
                        received[connection] = (listeners[source], [])
                        continue
                    chunk = source.recv(1 << 20)
                    parts = received[source][1]
                    if not chunk:
                        closed.add(source)
                    elif not parts and chunk.startswith(b'{"version":1,"topic":"diagnostic"'):
                        dropped.add(source)
                    elif source not in dropped:
                        parts.append(chunk)
        finally:
            for process in processes:
                if process.is_alive():
                    process.kill()
                process.join()
            for source in [*listeners, *received]:
                source.close()
        outputs = [
            b"".join(b"".join(parts) + b"\n" for chain_of, parts in received.values() if chain_of == chain)
            for chain in range(1, chains + 1)
        ]
        for chain, process in enumerate(processes, 1):
            if process.exitcode != 0:
                error = Path(f"{folder}/{chain}.sock.error")
                message = error.read_text() if error.exists() else _stan_errors(outputs[chain - 1])
                raise RuntimeError(f"Stan chain {chain} failed (exit {process.exitcode}): {message}")
    return outputs


def _stan_errors(output: bytes) -> str:
    """Stan's error and warning messages from a chain's logger lines."""
    found = []
    for line in output.splitlines():
        if b'"topic":"logger"' in line:
            level, _, text = json.loads(line)["values"][0].partition(":")
            if level in ("error", "warn") and text.strip():
                found.append(text.strip())
    return " ".join(found) or "no message from Stan"


def sample_table(output: bytes, draws: int) -> tuple[list[str], np.ndarray]:
    """A chain's draws from its sample-writer lines: the column names (``lp__``, ..., then Stan's flat
    constrained names such as ``beta.2.1``) and a (draws, columns) array."""
    rows = []
    for line in output.splitlines():
        if b'"topic":"sample","values":{' in line:
            try:
                rows.append(orjson.loads(line)["values"])
            except orjson.JSONDecodeError:  # a NaN or inf in the draw: orjson refuses them, json reads them
                rows.append(json.loads(line)["values"])
    if len(rows) != draws:
        raise RuntimeError(f"Stan sent {len(rows)} draws, expected {draws}")
    return list(rows[0]), np.array([list(row.values()) for row in rows], dtype=float)


def group_columns(columns: list[str], values: np.ndarray) -> dict[str, np.ndarray]:
    """Flat columns of a (chains, draws, columns) array (``theta.1.2``, column-major as Stan writes them) ->
    name -> (chains, draws, *shape); the sampler's ``__`` columns left out."""
    spans: dict[str, list[int]] = {}
    for i, column in enumerate(columns):
        if not column.endswith("__"):
            spans.setdefault(column.split(".")[0], []).append(i)
    draws = {}
    for name, indices in spans.items():
        indexes = [tuple(int(part) for part in columns[i].split(".")[1:]) for i in indices]
        shape = tuple(map(max, zip(*indexes)))
        block = values[..., indices[0] : indices[-1] + 1]
        draws[name] = block.reshape(*block.shape[:2], *shape, order="F")
    return draws


def _parse_elapsed(stan_output: bytes) -> dict[str, float]:
    """Stan's per-chain warmup and sampling seconds, from its logger lines (searched alone: the regex is slow on
    megabytes of draws)."""
    logger = b"\n".join(line for line in stan_output.splitlines() if b'"topic":"logger"' in line)
    found = {}
    for match in ELAPSED_RE.finditer(logger.decode(errors="replace")):
        found["warmup" if match.group(2) == "Warm-up" else "sampling"] = float(match.group(1))
    if set(found) != {"warmup", "sampling"}:
        raise RuntimeError("Stan output holds no elapsed-time report")
    return found


def _stan_version(header: Path) -> str:
    """The Stan library version a ``stan/version.hpp`` declares."""
    parts = dict(re.findall(r"#define STAN_(MAJOR|MINOR|PATCH) (\d+)", header.read_text()))
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"


def _httpstan_stan_version() -> str:
    import httpstan

    return _stan_version(Path(httpstan.__file__).parent / "include" / "stan" / "version.hpp")


class CmdStanBackend:
    """CmdStan through cmdstanpy; executables cached by content (source, CmdStan version, compiler options)."""

    def __init__(self, cmdstan: str):
        self.cmdstan = cmdstan

    @staticmethod
    def cpp_options(code: str, isa: str) -> dict:
        """cmdstanpy's ``cpp_options`` (make variables) for a program: CmdStan's defaults (-O3) with the ISA's flags
        in CXXFLAGS_OPTIM, which Stan Math's make/compiler_flags documents as "additional flags to CXXFLAGS" (a
        CXXFLAGS on make's command line would replace CmdStan's own in older releases); Stan's threading for the
        reduce_sum programs; and a main object of the ISA's own (``main_object``)."""
        threads = "reduce_sum" in code
        return {
            "CXXFLAGS_OPTIM": isas.stan_flags(isa),
            **({"STAN_THREADS": True} if threads else {}),
            "CMDSTAN_MAIN_O": CmdStanBackend.main_object(isa, threads),
        }

    @staticmethod
    def main_object(isa: str, threads: bool) -> str:
        """The main object a program built for ``isa`` links, relative to CmdStan's folder. CmdStan links every
        model with one ``src/cmdstan/main[_threads].o`` (NUTS, the CSV writers), built once by ``make build``
        with CmdStan's flags and never again, whatever CXXFLAGS_OPTIM a model gets: a -march=native model beside
        it is one program whose halves disagree on Eigen's alignment (AVX: 32 bytes), the mix that killed the
        bundled Stan's chains with "double free or corruption" (``_services_built_with``). So each ISA's models
        link a main object built with its flags (make's CMDSTAN_MAIN_O; ``make clean`` removes it with CmdStan's
        own, src/cmdstan/main*.o)."""
        tag = re.sub(r"[^A-Za-z0-9]+", "-", isas.stan_flags(isa)).strip("-")
        return f"src/cmdstan/main{'_threads' if threads else ''}_{tag}.o"

    def build_main_object(self, options: dict) -> None:
        """Build ``options``' main object unless it is there: make with the options cmdstanpy will pass (so the
        same flags), to a name of this process's own, then renamed into place, so two compiles at once never
        link a half-written one (as ``services_folder``)."""
        main = Path(self.cmdstan) / options["CMDSTAN_MAIN_O"]
        if main.exists():
            return
        partial = f"{options['CMDSTAN_MAIN_O']}.{os.getpid()}.partial"
        variables = [f"{key}={value}" for key, value in {**options, "CMDSTAN_MAIN_O": partial}.items()]
        done = subprocess.run(
            [os.environ.get("MAKE", "make"), *variables, partial],
            cwd=self.cmdstan,
            capture_output=True,
            text=True,
            errors="replace",
        )
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
            raise RuntimeError(f"CmdStan's main object for {options['CXXFLAGS_OPTIM']} failed to build:\n{tail}")
        os.replace(Path(self.cmdstan) / partial, main)

    def info(self, isa: str = "native") -> dict:
        import cmdstanpy

        version = cmdstanpy.cmdstan_version()
        header = Path(self.cmdstan) / "stan" / "src" / "stan" / "version.hpp"
        return {
            "stan_interface": "cmdstanpy",
            "cmdstanpy": metadata.version("cmdstanpy"),
            "cmdstan_path": self.cmdstan,
            "cmdstan_version": ".".join(map(str, version)) if version else "unknown",
            # The Stan library it compiles against (what the draws depend on), from its header.
            "stan_version": _stan_version(header) if header.exists() else "unknown",
            "compile_flags": f"CmdStan defaults (-O3) CXXFLAGS_OPTIM={isas.stan_flags(isa)}, its main object "
            "(NUTS) too",
            **isas.info(isa),
            "dtype": "float64",
        }

    def compile(self, stan_file: Path, isa: str = "native"):
        import cmdstanpy

        code = stan_file.read_text()
        options = self.cpp_options(code, isa)
        key = hashlib.sha256(f"{code}|{self.info(isa)['stan_version']}|{sorted(options.items())}".encode())
        folder = cache_dir() / "cmdstan" / key.hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        copied = folder / stan_file.name
        if not copied.exists():
            copied.write_text(code)
        cached = (folder / stan_file.stem).exists()
        start = time.perf_counter()
        self.build_main_object(options)
        model = cmdstanpy.CmdStanModel(stan_file=str(copied), cpp_options=options)
        return {"model": model, "isa": isa, "compile_s": time.perf_counter() - start, "cached": cached}

    def sample(self, handle, data: dict, config: RunConfig, seed: int, threads: int = 1) -> SampleResult:
        with tempfile.TemporaryDirectory(prefix="stanjax-cmdstan-") as output_dir:
            start = time.perf_counter()
            fit = handle["model"].sample(
                data={k: np.asarray(v).tolist() for k, v in data.items()},
                chains=config.chains,
                parallel_chains=config.chains,
                iter_warmup=config.warmup,
                iter_sampling=config.draws,
                seed=seed,
                adapt_delta=config.target_accept,
                max_treedepth=config.max_treedepth,
                **({"threads_per_chain": threads} if threads > 1 else {}),
                output_dir=output_dir,
                show_progress=False,
                show_console=False,
            )
            draws = {}
            for name in fit.metadata.stan_vars:
                values = fit.stan_variable(name)  # (chains * draws, *shape), chain after chain
                draws[name] = values.reshape(config.chains, config.draws, *values.shape[1:])
            method = fit.method_variables()  # name -> (draws, chains)
            user_s = time.perf_counter() - start
        stats = SamplerStats(
            n_leapfrog=method["n_leapfrog__"].T.astype(np.int64),
            divergent=method["divergent__"].T.astype(bool),
            step_size=[float(s) for s in fit.step_size],
        )
        timings = _stan_split(fit.time, user_s, handle["compile_s"], handle["cached"], "cmdstanpy", config)
        return SampleResult(draws, timings, stats, self.info(handle["isa"]))
