"""CmdStan through cmdstanpy, the Stan engine's back end where a CmdStan installation is found: executables
cached by content, each built for the run's instruction set with a main object (NUTS) built alike.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from stanjax.runner.core import isa as isas
from stanjax.runner.core.config import RunConfig
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats
from stanjax.runner.core.paths import cache_dir
from stanjax.runner.engines import stan_build
from stanjax.runner.engines.stan_output import _stan_split, _stan_version


class CmdStanBackend:
    """CmdStan through cmdstanpy; executables cached by content (source, CmdStan version, compiler options)."""

    def __init__(self, cmdstan: str):
        self.cmdstan = cmdstan

    @staticmethod
    def cpp_options(code: str, isa: str, threaded: bool = False) -> dict:
        """cmdstanpy's ``cpp_options`` (make variables) for a program: CmdStan's defaults (-O3) with the ISA's flags
        in CXXFLAGS_OPTIM, which Stan Math's make/compiler_flags documents as "additional flags to CXXFLAGS" (a
        CXXFLAGS on make's command line would replace CmdStan's own in older releases); Stan's threading for the
        reduce_sum programs, or where ``threaded`` (multi-path Pathfinder runs its paths on threads); and a main
        object of the ISA's own (``main_object``)."""
        threads = threaded or stan_build.uses_threads(code)
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
        bundled Stan's chains with "double free or corruption" (``stan_build``). So each ISA's models
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

    def compile(
        self, stan_file: Path, isa: str = "native", stanc_options: tuple[str, ...] = (), threaded: bool = False
    ):
        """Build (or find in the cache) ``stan_file`` for ``isa``, translated with ``stanc_options`` (e.g. --O1)."""
        import cmdstanpy

        code = stan_file.read_text()
        options = self.cpp_options(code, isa, threaded)
        translate = {option.lstrip("-"): True for option in stanc_options}  # cmdstanpy's form: {"O1": True}
        translated = f"|{sorted(translate)}" if translate else ""  # none: the key executables built before had
        key = hashlib.sha256(f"{code}|{self.info(isa)['stan_version']}|{sorted(options.items())}{translated}".encode())
        folder = cache_dir() / "cmdstan" / key.hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        copied = folder / stan_file.name
        if not copied.exists():
            copied.write_text(code)
        cached = (folder / stan_file.stem).exists()
        start = time.perf_counter()
        self.build_main_object(options)
        model = cmdstanpy.CmdStanModel(stan_file=str(copied), cpp_options=options, stanc_options=translate)
        return {
            "model": model,
            "isa": isa,
            "stan_threads": bool(options.get("STAN_THREADS")),
            "stanc_options": stanc_options,
            "compile_s": time.perf_counter() - start,
            "cached": cached,
        }

    def sample(self, handle, data: dict, config: RunConfig, seed: int, threads: int = 1) -> SampleResult:
        with tempfile.TemporaryDirectory(prefix="stanjax-cmdstan-") as output_dir:
            start = time.perf_counter()
            fit = handle["model"].sample(
                data=json_data(data),
                chains=config.chains,
                parallel_chains=config.chains,
                iter_warmup=config.warmup,
                iter_sampling=config.draws,
                seed=seed,
                adapt_delta=config.target_accept,
                inits=config.init_radius,  # a number: chains start uniformly within this radius
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
        info = {
            **self.info(handle["isa"]),
            "stan_threads": handle["stan_threads"],
            "stanc_options": " ".join(handle["stanc_options"]),
        }
        return SampleResult(draws, timings, stats, info)


def json_data(data: dict) -> dict:
    """The run's data as cmdstanpy writes it to CmdStan's JSON: NumPy arrays as nested lists."""
    return {key: np.asarray(value).tolist() for key, value in data.items()}
