"""The Stan engine: bundled Stan through pystan/httpstan by default, CmdStan through cmdstanpy when one is found.

Both back ends run Stan's own NUTS with diagonal-metric adaptation, one process per chain. The wall time of the
sample call (data and draw transport included) is split into warmup and sampling in the ratio of Stan's own
per-chain elapsed times, summed over chains. The split cannot come from the chain clocks alone: httpstan runs
at most one chain per core at a time, so with more chains than cores they run in batches; cmdstanpy runs them
all at once. Stan's per-chain clocks are kept in ``detail``.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from models import ModelSpec, UsageError
from runner.config import Placement, RunConfig
from runner.engines import SampleResult, SamplerStats, Timings
from runner.paths import cache_dir

ELAPSED_RE = re.compile(r"([0-9.eE+-]+) seconds \((Warm-up|Sampling)\)")


def check_program(spec: ModelSpec) -> None:
    """Run stanc (bundled with httpstan) on the spec's program; raise UsageError with stanc's message if it fails."""
    import httpstan.compile

    try:
        httpstan.compile.compile(spec.stan_file.read_text(), f"check_{spec.model_name}")
    except ValueError as err:
        lines = [line.strip() for line in str(err).splitlines()]
        message = " ".join(line for line in lines if line and not re.match(r"(\d+:|-+$|\^)", line))
        raise UsageError(f"{spec.stan_file.name} does not compile: {message}") from None


def find_cmdstan() -> str | None:
    """The CmdStan installation cmdstanpy would use (``CMDSTAN`` or its default folder), or None."""
    try:
        import cmdstanpy

        return cmdstanpy.cmdstan_path()
    except (ValueError, ImportError):
        return None


class StanEngine:
    name = "stan"

    def __init__(self):
        cmdstan = find_cmdstan()
        self.backend = CmdStanBackend(cmdstan) if cmdstan else PyStanBackend()

    def compile(self, spec: ModelSpec):
        return self.backend.compile(spec)

    def sample(self, handle, data: dict, config: RunConfig, seed: int,
               placement: Placement = Placement()) -> SampleResult:
        if placement.device != "cpu":
            raise ValueError("Stan runs on the CPU only")
        return self.backend.sample(handle, data, config, seed)


def _stan_split(per_chain: list[dict[str, float]], wall_s: float, compile_s: float, cached: bool,
                interface: str) -> Timings:
    warmup = sum(c["warmup"] for c in per_chain)
    sampling = sum(c["sampling"] for c in per_chain)
    warmup_share = warmup / (warmup + sampling)
    return Timings(
        compile_s=compile_s, warmup_s=wall_s * warmup_share, sampling_s=wall_s * (1 - warmup_share),
        source=f"{interface} sample-call wall, split by Stan's per-chain warmup:sampling elapsed times",
        compile_cached=cached,
        detail={"wall_s": wall_s, "chain_warmup_s": [c["warmup"] for c in per_chain],
                "chain_sampling_s": [c["sampling"] for c in per_chain]})


def _by_chain(fit, name: str, n_chains: int) -> np.ndarray:
    """pystan's ``fit[name]`` is (*shape, draws * chains), chain index fastest -> (chains, draws, *shape)."""
    shape = fit.dims[fit.param_names.index(name)] if name in fit.param_names else []
    return np.moveaxis(fit[name].reshape(*shape, -1, n_chains), (-2, -1), (1, 0))


class PyStanBackend:
    """Bundled Stan: pystan 3 talking to an in-process httpstan, models compiled with -O3 and cached by content."""

    def info(self) -> dict:
        import httpstan

        return {
            "stan_interface": "pystan",
            "pystan": metadata.version("pystan"),
            "httpstan": httpstan.__version__,
            "stan_version": _httpstan_stan_version(),
            "compile_flags": "-O3 -std=c++17 (httpstan defaults)",
            "dtype": "float64",
        }

    def compile(self, spec: ModelSpec):
        import asyncio

        import httpstan.cache
        import httpstan.models
        import stan.common

        code = spec.stan_file.read_text()
        name = httpstan.models.calculate_model_name(code)
        cached = name in httpstan.cache.list_model_names()

        async def build():
            async with stan.common.HttpstanClient() as client:
                resp = await client.post("/models", json={"program_code": code})
                if resp.status != 201:
                    raise RuntimeError(f"{spec.stan_file.name} failed to compile: {resp.json()['message']}")

        start = time.perf_counter()
        asyncio.run(build())
        return {"code": code, "model_name": name, "compile_s": time.perf_counter() - start, "cached": cached}

    def sample(self, handle, data: dict, config: RunConfig, seed: int) -> SampleResult:
        import stan

        _forget_cached_fits(handle["model_name"])  # httpstan replays a cached fit for a repeated seed
        start = time.perf_counter()
        posterior = stan.build(handle["code"], data=data, random_seed=seed)
        fit = posterior.sample(num_chains=config.chains, num_warmup=config.warmup, num_samples=config.draws,
                               delta=config.target_accept, max_depth=config.max_treedepth)
        wall_s = time.perf_counter() - start
        _forget_cached_fits(handle["model_name"])
        per_chain = [_parse_elapsed(output) for output in fit.stan_outputs]
        draws = {name: _by_chain(fit, name, config.chains) for name in fit.param_names}
        stats = SamplerStats(
            n_leapfrog=_by_chain(fit, "n_leapfrog__", config.chains).astype(np.int64),
            divergent=_by_chain(fit, "divergent__", config.chains).astype(bool),
            step_size=[float(s) for s in _by_chain(fit, "stepsize__", config.chains)[:, 0]],
        )
        timings = _stan_split(per_chain, wall_s, handle["compile_s"], handle["cached"], "pystan")
        return SampleResult(draws, timings, stats, self.info())


def _parse_elapsed(stan_output: bytes) -> dict[str, float]:
    found = {}
    for match in ELAPSED_RE.finditer(stan_output.decode(errors="replace")):
        found["warmup" if match.group(2) == "Warm-up" else "sampling"] = float(match.group(1))
    if set(found) != {"warmup", "sampling"}:
        raise RuntimeError("Stan output holds no elapsed-time report")
    return found


def _forget_cached_fits(model_name: str) -> None:
    import httpstan.cache

    shutil.rmtree(httpstan.cache.model_directory(model_name) / "fits", ignore_errors=True)


def _stan_version(header: Path) -> str:
    """The Stan library version a ``stan/version.hpp`` declares."""
    parts = dict(re.findall(r"#define STAN_(MAJOR|MINOR|PATCH) (\d+)", header.read_text()))
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"


def _httpstan_stan_version() -> str:
    import httpstan

    return _stan_version(Path(httpstan.__file__).parent / "include" / "stan" / "version.hpp")


class CmdStanBackend:
    """CmdStan through cmdstanpy; executables cached by content (source, CmdStan version, compiler options)."""

    CPP_OPTIONS: dict = {}  # CmdStan's defaults: -O3, no threading (chains are separate processes)

    def __init__(self, cmdstan: str):
        self.cmdstan = cmdstan

    def info(self) -> dict:
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
            "compile_flags": "CmdStan defaults (-O3)" + "".join(f" {k}={v}" for k, v in self.CPP_OPTIONS.items()),
            "dtype": "float64",
        }

    def compile(self, spec: ModelSpec):
        import cmdstanpy

        code = spec.stan_file.read_text()
        key = hashlib.sha256(f"{code}|{self.info()['stan_version']}|{sorted(self.CPP_OPTIONS.items())}".encode())
        folder = cache_dir() / "cmdstan" / key.hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        stan_file = folder / spec.stan_file.name
        if not stan_file.exists():
            stan_file.write_text(code)
        cached = (folder / spec.stan_file.stem).exists()
        start = time.perf_counter()
        model = cmdstanpy.CmdStanModel(stan_file=str(stan_file), cpp_options=self.CPP_OPTIONS)
        return {"model": model, "compile_s": time.perf_counter() - start, "cached": cached}

    def sample(self, handle, data: dict, config: RunConfig, seed: int) -> SampleResult:
        with tempfile.TemporaryDirectory(prefix="stanjax-cmdstan-") as output_dir:
            start = time.perf_counter()
            fit = handle["model"].sample(
                data={k: np.asarray(v).tolist() for k, v in data.items()}, chains=config.chains,
                parallel_chains=config.chains, iter_warmup=config.warmup, iter_sampling=config.draws,
                seed=seed, adapt_delta=config.target_accept, max_treedepth=config.max_treedepth,
                output_dir=output_dir, show_progress=False, show_console=False)
            draws = {}
            for name in fit.metadata.stan_vars:
                values = fit.stan_variable(name)  # (chains * draws, *shape), chain after chain
                draws[name] = values.reshape(config.chains, config.draws, *values.shape[1:])
            method = fit.method_variables()  # name -> (draws, chains)
            wall_s = time.perf_counter() - start
        stats = SamplerStats(n_leapfrog=method["n_leapfrog__"].T.astype(np.int64),
                             divergent=method["divergent__"].T.astype(bool),
                             step_size=[float(s) for s in fit.step_size])
        timings = _stan_split(fit.time, wall_s, handle["compile_s"], handle["cached"], "cmdstanpy")
        return SampleResult(draws, timings, stats, self.info())

