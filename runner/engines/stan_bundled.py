"""Bundled Stan: httpstan's compiled NUTS driven directly, the Stan engine's default back end. It builds each
program for the run's instruction set (with a services object built alike) and runs every chain at once in its
own forked process, reading the chains' sockets itself; what the chains send is read by
:mod:`stanjax.runner.engines.stan_output`.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import socket
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from stanjax.models import UsageError
from stanjax.runner.core import isa as isas
from stanjax.runner.core import migrations, run_progress
from stanjax.runner.core.config import RunConfig
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats
from stanjax.runner.engines import stan_build
from stanjax.runner.engines.stan_output import (
    DRAWS_HEADER,
    _parse_elapsed,
    _stan_errors,
    _stan_split,
    _stan_version,
    group_columns,
    last_tree,
    latest_iteration,
    sample_table,
)
from stanjax.runner.engines.stanc import STANC_TRIES, stanc_timed_out, translated_with


class HttpstanBackend:
    """Bundled Stan: the NUTS of httpstan's compiled model module, one forked process per chain.

    httpstan (the server inside pystan 3) compiles each program with -O3 into a Python extension whose
    ``hmc_nuts_diag_e_adapt_wrapper`` runs ``stan::services::sample::hmc_nuts_diag_e_adapt`` and streams JSON lines
    to a Unix socket. pystan drives that call through an in-process HTTP server that polls progress, compresses
    every message and runs at most one chain per core: on 2 cores that cost 1.3-1.5x CmdStan's wall time. Here the
    same call with the same arguments (so the same draws, tested against pystan) runs every chain at once in its
    own forked process, as cmdstanpy does, and one ``select`` reads the sockets, in batches (``BATCH_WAIT_S``).
    """

    FUNCTION = "hmc_nuts_diag_e_adapt"

    def info(self, isa: str = "native", threads: bool = False) -> dict:
        import httpstan

        return {
            "stan_interface": "httpstan",
            "pystan": metadata.version("pystan"),
            "httpstan": httpstan.__version__,
            "stan_version": _httpstan_stan_version(),
            "compile_flags": f"{stan_build.flags(isa)} (CPPFLAGS) {stan_build.HTTPSTAN_ARGS} (httpstan's)",
            "stan_threads": threads,
            "diagnostic_writer": migrations.DIAGNOSTIC_WRITER_NONE,
            "sample_writer": migrations.SAMPLE_WRITER_DOUBLES,
            **isas.info(isa),
            "chain_processes": "one forked process per chain, all at once",
            "dtype": "float64",
        }

    @staticmethod
    def program_code(stan_file: Path, isa: str, stanc_options: tuple[str, ...] = ()) -> str:
        """The program text httpstan builds for ``isa``: the program with a comment naming the build (flags, whether
        STAN_THREADS: ``stan_build``) and stanc's options, where any, appended. httpstan's cache key
        (``calculate_model_name``) hashes the text, not the flags, so the comment makes each build of a program its
        own cache entry. ``stan.build`` of this text, once ``compile`` has built it, finds the same module in the
        cache."""
        text = stan_file.read_text()
        translated = f", translated with stanc {' '.join(stanc_options)}" if stanc_options else ""
        built = stan_build.described(isa, stan_build.uses_threads(text))
        return f"{text}\n// stanjax: built with {built}, its stan_services.o too{translated}\n"

    @classmethod
    def cached(cls, stan_file: Path, isa: str = "native", stanc_options: tuple[str, ...] = ()) -> bool:
        """Whether httpstan's cache holds this build of the program (``compile`` would build nothing), for this
        interpreter."""
        import httpstan.cache
        import httpstan.models

        name = httpstan.models.calculate_model_name(cls.program_code(stan_file, isa, stanc_options))
        return name in httpstan.cache.list_model_names()

    def compile(self, stan_file: Path, isa: str = "native", stanc_options: tuple[str, ...] = ()):
        """Build through pystan's in-process httpstan as ``stan_build`` says (the ISA's flags, STAN_THREADS only for
        programs that run threads) and with stanc's options where any (``translated_with``); its model cache is
        keyed by ``program_code``. A module already in the cache is loaded as httpstan's server would load it, without
        starting the server (half a second of imports). One process at a time builds a program (``building``)."""
        import httpstan.models

        code = self.program_code(stan_file, isa, stanc_options)
        name = httpstan.models.calculate_model_name(code)
        with stan_build.building(name):
            return self._compile_locked(stan_file, code, name, isa, stanc_options)

    def _compile_locked(self, stan_file: Path, code: str, name: str, isa: str, stanc_options: tuple[str, ...]):
        """``compile`` while this process alone builds ``name``."""
        import httpstan.cache
        import httpstan.models

        cached = name in httpstan.cache.list_model_names()
        if not cached and not (Path(httpstan.models.__file__).parent / "include" / "stan" / "model").is_dir():
            raise RuntimeError(  # docker/slim-httpstan.py's wheel on a GPU box: it samples carried modules only
                f"{stan_file.name} is not compiled here and this httpstan has no C++ headers to compile it "
                "(a slimmed wheel): carry its module (make gpu-stan)"
            )

        async def build():
            import stan.common

            async with stan.common.HttpstanClient() as client:
                for _ in range(STANC_TRIES):
                    resp = await client.post("/models", json={"program_code": code})
                    if resp.status == 201:
                        return
                    message = _error_message(resp)
                    if not stanc_timed_out(resp.status, message):
                        break
                raise RuntimeError(f"{stan_file.name} failed to compile: {message}")

        start = time.perf_counter()
        threads = stan_build.uses_threads(code)  # the program and its build comment, which names no function
        if not (cached and _loads(name)):
            import asyncio

            with stan_build.built_as(isa, threads), translated_with(stanc_options):
                asyncio.run(build())
        return {
            "model_name": name,
            "program_code": code,
            "isa": isa,
            "stan_threads": threads,
            "stanc_options": stanc_options,
            "compile_s": time.perf_counter() - start,
            "cached": cached,
            "carried": stan_build.carried_from(name),
        }

    def sample(self, handle, data: dict, config: RunConfig, seed: int, threads: int = 1) -> SampleResult:
        import httpstan.models

        start = time.perf_counter()
        module = httpstan.models.import_services_extension_module(handle["model_name"])
        outputs = _run_chains(module, nuts_arguments(module, data, config, seed), config.chains, threads)
        columns = sample_table(outputs[0].draws, config.draws)[0]
        tables = [sample_table(output.draws, config.draws)[1] for output in outputs]  # views of what was sent
        draws = group_columns(columns, tables)
        user_s = time.perf_counter() - start
        column = {name: i for i, name in enumerate(columns)}
        stats = SamplerStats(
            n_leapfrog=np.stack([table[:, column["n_leapfrog__"]] for table in tables]).astype(np.int64),
            divergent=np.stack([table[:, column["divergent__"]] for table in tables]).astype(bool),
            step_size=[float(table[0, column["stepsize__"]]) for table in tables],
        )
        per_chain = [_parse_elapsed(output.text) for output in outputs]
        timings = _stan_split(per_chain, user_s, handle["compile_s"], handle["cached"], "httpstan", config)
        info = {**self.info(handle["isa"], handle["stan_threads"]), "stanc_options": " ".join(handle["stanc_options"])}
        if handle.get("carried"):
            info["module"] = handle["carried"]
        if threads > 1:
            info["chain_processes"] += f", each pinned to its own {threads} cores (TBB's threads for reduce_sum)"
        return SampleResult(draws, timings, stats, info)


def _loads(model_name: str) -> bool:
    """Whether httpstan's cached module loads (else it is built again, as httpstan's server would do)."""
    import httpstan.models

    try:
        httpstan.models.import_services_extension_module(model_name)
    except KeyError:
        return False
    return True


def _error_message(resp) -> str:
    try:
        return resp.json()["message"]
    except ValueError:  # a plain-text 500
        return resp.content.decode(errors="replace").strip()


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
        "init_radius": config.init_radius,
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
    os.environ[stan_build.DRAWS_WRITER_ENV] = "1"  # this chain's draws as doubles (stan_build.DRAWS_WRITER)
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


# The chains send a message an iteration (a draw): read one by one, the
# reader woke for every message, and each wake took a core from a chain where chains outnumber cores (eight
# schools, one chain and the reader on one core: 0.0096 ms a gradient by Stan's clock, 0.0040 read in batches). So
# after a round in which no socket brought much it waits a moment, and the next round reads many messages at once;
# after a round in which one brought much (a big model's draws, near filling that socket's buffer) it reads on.
BATCH_BYTES = 1 << 16
BATCH_WAIT_S = 0.002
PROGRESS_S = 5.0  # how often the reader reports the chains' progress (run_progress), from what they sent


class Received:
    """What one of a chain's connections has sent, received into one buffer that grows as it fills (Linux grows a
    large one in place): chunks received apart and joined after the run cost eight schools' 4 x 50,000 draws a
    second copy, 5 ms of the user clock after the last chain ended."""

    def __init__(self, chain: int):
        self.chain = chain
        self.buffer = bytearray(BATCH_BYTES)
        self.size = 0

    def receive(self, source: socket.socket) -> int:
        """Receive what ``source`` has ready (0: it closed)."""
        if len(self.buffer) - self.size < BATCH_BYTES:
            self.buffer.extend(bytes(len(self.buffer)))
        got = source.recv_into(memoryview(self.buffer)[self.size :])
        self.size += got
        return got

    def sent(self) -> bytearray:
        """What was sent: the buffer cut to it, in place."""
        del self.buffer[self.size :]
        return self.buffer


@dataclass(frozen=True)
class ChainOutput:
    """What one chain sent: the JSON lines of its logger and init writer (``text``), and its draws writer's bytes
    (``draws``: ``stan_output.sample_table`` reads them). Its services object has no diagnostic writer
    (``stan_build.NO_OP_WRITER``)."""

    text: bytes
    draws: bytes | bytearray


def _run_chains(module, arguments: dict, chains: int, threads: int = 1) -> list[ChainOutput]:
    """Run every chain at once; what each sent. With ``threads`` > 1 each chain runs on its own ``threads`` of this
    process's cores. Refused in a process that has loaded JAX (see ``_refuse_to_fork_with_jax``)."""
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
            listener.listen(3)  # Stan's logger and its init and sample writers
            listeners[listener] = chain
            cores = usable[(chain - 1) * threads : chain * threads] if threads > 1 else None
            process = context.Process(target=_chain_process, args=(module, path, {**arguments, "chain": chain}, cores))
            process.start()
            processes.append(process)
        received: dict[socket.socket, Received] = {}
        progress = run_progress.Throttle(PROGRESS_S)
        closed: set[socket.socket] = set()
        running = {process.sentinel for process in processes}  # readable once the process has ended
        try:
            while True:
                # A chain that has ended has made all it sent readable (its connections read as closed), so once
                # every chain has ended, nothing readable means nothing left.
                open_sources: list[socket.socket | int] = [
                    *listeners,
                    *(source for source in received if source not in closed),
                    *running,
                ]
                readable = select.select(open_sources, [], [], None if running else 0)[0]
                if not readable:
                    break
                brought = 0
                for source in readable:
                    if isinstance(source, int):  # a process's sentinel: the sockets are the rest
                        running.remove(source)
                        continue
                    if source in listeners:
                        connection, _ = source.accept()
                        received[connection] = Received(listeners[source])
                        continue
                    got = received[source].receive(source)
                    brought = max(brought, got)
                    if not got:
                        closed.add(source)
                if running and brought < BATCH_BYTES:
                    time.sleep(BATCH_WAIT_S)
                if progress.due():
                    _report_progress(list(received.values()), chains)
        finally:
            for process in processes:
                if process.is_alive():
                    process.kill()
                process.join()
            for source in [*listeners, *received]:
                source.close()
        outputs = [
            chain_output([sent.sent() for sent in received.values() if sent.chain == chain])
            for chain in range(1, chains + 1)
        ]
        for chain, process in enumerate(processes, 1):
            if process.exitcode != 0:
                error = Path(f"{folder}/{chain}.sock.error")
                message = error.read_text() if error.exists() else _stan_errors(outputs[chain - 1].text)
                raise RuntimeError(f"Stan chain {chain} failed (exit {process.exitcode}): {message}")
    return outputs


def _report_progress(received: list[Received], chains: int) -> None:
    """The slowest chain's newest iteration, as its logger said it (every ``refresh`` iterations), and once it
    samples, its last tree."""
    iterations, trees = {}, {}
    for sent in received:
        if sent.buffer.startswith(DRAWS_HEADER):
            trees[sent.chain] = last_tree(sent.buffer, sent.size)
        elif reached := latest_iteration(sent.buffer, sent.size):
            iterations[sent.chain] = reached
    if not iterations:
        return
    chain, (done, total, phase) = min(iterations.items(), key=lambda item: item[1][0])
    slowest = f", the slowest of {chains} chains" if chains > 1 else ""
    text = f"Stan: iteration {done:,} of {total:,} ({phase.lower()}){slowest}"
    if tree := trees.get(chain):
        text += f"; its last tree {tree[1]} leapfrog steps (depth {tree[0]})"
    run_progress.report(text)


def chain_output(connections: list[bytes] | list[bytearray]) -> ChainOutput:
    """A chain's connections (its logger, init writer and draws writer) as what it sent: the draws writer's is the
    one that starts with its header (none where the chain failed before its first draw)."""
    draws = [sent for sent in connections if sent.startswith(DRAWS_HEADER)]
    text = b"".join(sent + b"\n" for sent in connections if not sent.startswith(DRAWS_HEADER))
    return ChainOutput(text, draws[0] if draws else b"")


def _httpstan_stan_version() -> str:
    import httpstan

    return _stan_version(Path(httpstan.__file__).parent / "include" / "stan" / "version.hpp")
