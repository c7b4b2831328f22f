"""The engine registry: what each engine is, and the two calls every adapter in ``runner/engines/`` answers.

``compile(spec, placement) -> handle`` builds (or fetches from cache) the model (the placement picks Stan's
program: the reduce_sum one with threads per chain); ``sample(handle, data, config, seed,
placement)`` runs the sampler where the placement says and returns a :class:`SampleResult`. Engines never compute
ESS or R-hat: that is :mod:`stanjax.runner.measure.metrics`' job, one code path for all.

:data:`ENGINES` is the one place that says what an engine is: its family (Stan or JAX), its front ends and their
report labels, the devices it runs on, its default precision and chain method per device, and whether it samples
the posterior (MCMC) or fits an approximation to it (``approximate``: judged by its Pareto k-hat and its errors
against a reference, never by ESS). Placement, labels, claims, figures, studies and compare read it. Adding an
engine = one module in ``runner/engines/`` plus its entry below.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from stanjax.models import ModelSpec, UnknownChoice, UsageError, option
from stanjax.runner.core.config import Placement, RunConfig


@dataclass
class Timings:
    """Seconds, on the same two clocks for every engine, compilation excluded from both (``compile_s``):

    - ``user_s``: data handed over -> draws in host NumPy arrays, what a user waits for (the ESS/s denominator);
    - ``warmup_s`` + ``sampling_s`` = ``sampler_s``: the sampler's own computation (Stan's elapsed times; JAX's
      device computation, after ``block_until_ready``, before the host copy); ms per gradient uses ``sampling_s``.

    ``user_s - sampler_s`` is the front end's overhead. ``source`` says how each was obtained; ``detail`` holds the
    engine's own clocks."""

    compile_s: float
    warmup_s: float
    sampling_s: float
    user_s: float
    source: str
    compile_cached: bool = False
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def sampler_s(self) -> float:
        return self.warmup_s + self.sampling_s


@dataclass
class SamplerStats:
    """Per-chain sampler statistics after warmup, shape (chains, draws); ``n_leapfrog`` = gradient evaluations."""

    n_leapfrog: np.ndarray
    divergent: np.ndarray
    warmup_gradients: int | None = None
    step_size: list[float] = field(default_factory=list)


@dataclass
class SampleResult:
    draws: dict[str, np.ndarray]  # name -> (chains, draws, *shape), constrained values
    timings: Timings
    stats: SamplerStats
    info: dict[str, Any]  # engine details for the record: backend, versions, flags, dtype


class Engine(Protocol):
    name: str

    def compile(self, spec: ModelSpec, placement: Placement = Placement()) -> Any: ...

    def sample(
        self, handle: Any, data: dict, config: RunConfig, seed: int, placement: Placement = Placement()
    ) -> SampleResult: ...


STAN, JAX = "stan", "jax"


@dataclass(frozen=True)
class EngineEntry:
    """What the rest of stanjax needs to know about an engine, without importing it.

    ``front_ends`` maps each front end's name to its report label (the first is the default); ``defaults`` maps
    each device to its (precision, chain method); ``chain_methods`` are the ones ``--chain-method`` may pick;
    ``factory`` is ``"module:callable"``, called with the front end (imported only when a run needs it: a Stan
    run never imports JAX); ``choose_front_end`` resolves a requested front end ("auto" or a name) on this
    machine; ``order`` ranks the
    engine as the numerator of a pairing (newer ways first); ``approximate``: an approximate-inference engine
    (variational fits, flows), whose draws are importance-weighted approximations: kept out of ESS pairings,
    suites and campaigns of samplers, and gated by its k-hat (:func:`stanjax.runner.measure.validity.evaluate_approximate`)."""

    name: str
    family: str
    front_ends: dict[str, str]
    defaults: dict[str, tuple[str, str]]
    chain_methods: tuple[str, ...]
    factory: str
    order: int
    choose_front_end: Callable[[str], str] | None = None
    retired: tuple[str, ...] = ()  # front ends kept only to name old records; never a claim's evidence
    recorded: tuple[str, ...] = ()  # front ends of old records that no run uses any more (the retired ones too)
    approximate: bool = False

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(self.defaults)

    def front_end(self, requested: str = "auto") -> str:
        """The front end a run uses: ``requested``, or with "auto" the one this machine offers
        (``choose_front_end``; else the first); a UsageError if the requested one is not here."""
        if requested != "auto" and (requested not in self.front_ends or requested in self.recorded):
            runnable = [name for name in self.front_ends if name not in self.recorded]
            raise UnknownChoice(f"front end of {self.name}", requested, runnable)
        if self.choose_front_end:
            return self.choose_front_end(requested)
        return next(iter(self.front_ends)) if requested == "auto" else requested

    def placement(self, device: str, x64: bool = False, chain_method: str | None = None) -> Placement:
        """The device policy: the engine runs on ``device`` if it can, else on its first device (Stan is the CPU
        baseline beside a GPU run); the device's default precision (float64 with ``x64``) and chain method,
        unless ``chain_method`` is one this engine accepts."""
        device = device if device in self.defaults else self.devices[0]
        precision, default_method = self.defaults[device]
        return Placement(
            device,
            "float64" if x64 else precision,
            chain_method if chain_method in self.chain_methods else default_method,
        )


def find_cmdstan() -> str | None:
    """The CmdStan installation cmdstanpy would use (``CMDSTAN`` or its default folder), or None."""
    try:
        import cmdstanpy

        return cmdstanpy.cmdstan_path()
    except (ValueError, ImportError):
        return None


def _stan_front_end(requested: str) -> str:
    """auto: CmdStan when one is installed, else the bundled Stan; cmdstan only where one is installed."""
    if requested == "cmdstan" and not find_cmdstan():
        raise UsageError(
            f"{option('stan', 'cmdstan')}: no CmdStan installation found (set CMDSTAN, or install one with "
            "cmdstanpy's install_cmdstan)"
        )
    if requested == "auto":
        return "cmdstan" if find_cmdstan() else "bundled"
    return requested


NO_CMDSTAN = (
    "Stan's ADVI and Pathfinder run through CmdStan, and no CmdStan installation is found (the bundled Stan only "
    "samples): set CMDSTAN, or install one with cmdstanpy's install_cmdstan"
)


def _cmdstan_only(name: str) -> Callable[[str], str]:
    """The front-end choice of an engine only CmdStan runs: refused, with the reason, where none is installed."""

    def choose(requested: str) -> str:
        if not find_cmdstan():
            raise UsageError(f"{name}: {NO_CMDSTAN}")
        return "cmdstan"

    return choose


def find_bridgestan() -> str | None:
    """The BridgeStan build nutpie_stan compiles against (``BRIDGESTAN``, else the folder bridgestan's Python side
    downloads to), or None where that holds no complete one: its makefile, stanc, and Stan's headers under stan/."""
    installed = Path.home() / ".bridgestan" / f"bridgestan-{metadata.version('bridgestan')}"
    root = Path(os.environ.get("BRIDGESTAN") or installed)
    parts = ("Makefile", "bin/stanc", "stan/src/stan/version.hpp", "stan/lib/stan_math/make/compiler_flags")
    return str(root) if all((root / part).is_file() for part in parts) else None


NO_BRIDGESTAN = (
    "nutpie runs a Stan program through BridgeStan, and no BridgeStan build is found: build one with "
    "benchmarks/bridgestan_from_httpstan.sh SNAPSHOT_GIT_DIR OUT_DIR and set BRIDGESTAN=OUT_DIR"
)


def _bridgestan_only(requested: str) -> str:
    """nutpie_stan's front-end choice: refused, with the reason, where no BridgeStan build is found."""
    if not find_bridgestan():
        raise UsageError(f"nutpie_stan: {NO_BRIDGESTAN}")
    return "bridgestan"


def _stan_approximate(name: str, label: str, order: int) -> EngineEntry:
    """One of CmdStan's approximations (``runner/engines/stan_approximate.py``; its factory has the engine's name)."""
    return EngineEntry(
        name,
        STAN,
        {"cmdstan": label},
        {"cpu": ("float64", "parallel")},
        ("parallel",),
        f"stanjax.runner.engines.stan_approximate:{name}",
        order=order,
        choose_front_end=_cmdstan_only(name),
        approximate=True,
    )


def _approximate(name: str, front_end: str, label: str, order: int) -> EngineEntry:
    """An approximate-inference engine of ``runner/engines/approximate.py`` (its factory has the engine's name)."""
    return EngineEntry(
        name,
        JAX,
        {front_end: label},
        {"cpu": ("float64", "vectorized"), "gpu": ("float32", "vectorized")},
        ("vectorized",),
        f"stanjax.runner.engines.approximate:{name}",
        order=order,
        approximate=True,
    )


ENGINES: dict[str, EngineEntry] = {
    entry.name: entry
    for entry in (
        # Stan's NUTS: the bundled Stan (httpstan's compiled NUTS driven directly), CmdStan through cmdstanpy when one
        # is installed. Records only: "httpstan", the bundled Stan as httpstan builds it (STAN_THREADS everywhere)
        # and driven before 2026-11-28 (migrations._v6_to_v7); "pystan", driven through pystan (before the direct
        # driver; retired: never a claim's evidence). Their order is the report's preference among them.
        EngineEntry(
            "stan",
            STAN,
            {"bundled": "Stan", "httpstan": "httpstan", "cmdstan": "CmdStan", "pystan": "PyStan"},
            {"cpu": ("float64", "parallel")},
            ("parallel",),
            "stanjax.runner.engines.stan:StanEngine",
            order=5,
            choose_front_end=_stan_front_end,
            retired=("pystan",),
            recorded=("httpstan", "pystan"),
        ),
        EngineEntry(
            "numpyro",
            JAX,
            {"numpyro": "NumPyro"},
            {"cpu": ("float64", "parallel"), "gpu": ("float32", "vectorized")},
            ("parallel", "vectorized", "sequential"),
            "stanjax.runner.engines.numpyro:NumPyroEngine",
            order=2,
        ),
        # BlackJAX NUTS with Stan-style window adaptation per chain, chains vmapped.
        EngineEntry(
            "blackjax_nuts",
            JAX,
            {"blackjax": "BlackJAX-NUTS"},
            {"cpu": ("float64", "vectorized"), "gpu": ("float32", "vectorized")},
            ("vectorized",),
            "stanjax.runner.engines.blackjax:nuts",
            order=1,
        ),
        # Jittered HMC tuned by ChEES across the chain batch: the many-chain, GPU-friendly adaptive HMC.
        EngineEntry(
            "blackjax_chees",
            JAX,
            {"blackjax": "BlackJAX-ChEES"},
            {"cpu": ("float64", "vectorized"), "gpu": ("float32", "vectorized")},
            ("vectorized",),
            "stanjax.runner.engines.blackjax:chees",
            order=0,
        ),
        # nutpie's NUTS on both sides' densities (runner/engines/nutpie.py): the Stan program through BridgeStan, and
        # the NumPyro model's potential jitted with its gradient. One sampler, two gradients: nutpie-JAX ÷ nutpie-Stan
        # is the gradient's effect, NumPyro ÷ nutpie-JAX the sampler's. Their orders (NumPyro 2 < nutpie-JAX 3 <
        # nutpie-Stan 4 < Stan 5) make the report's pairings read so.
        EngineEntry(
            "nutpie_stan",
            STAN,
            {"bridgestan": "nutpie-Stan"},
            {"cpu": ("float64", "parallel")},
            ("parallel",),
            "stanjax.runner.engines.nutpie:NutpieStanEngine",
            order=4,
            choose_front_end=_bridgestan_only,
        ),
        EngineEntry(
            "nutpie_jax",
            JAX,
            {"jax": "nutpie-JAX"},
            {"cpu": ("float64", "parallel")},
            ("parallel",),
            "stanjax.runner.engines.nutpie:NutpieJaxEngine",
            order=3,
        ),
        # Approximate inference (runner/engines/approximate.py): Carpenter's recipe, a RealNVP normalizing flow
        # (flowjax) trained by ELBO then Pareto-smoothed importance resampling, with the masked autoregressive flow
        # as a labelled extra; ADVI as NumPyro's SVI fits it; BlackJAX's multi-path Pathfinder.
        _approximate("flow_realnvp", "flowjax", "RealNVP-flow", order=-1),
        _approximate("flow_maf", "flowjax", "MAF-flow", order=-2),
        _approximate("advi_meanfield", "numpyro", "ADVI-meanfield", order=-3),
        _approximate("advi_fullrank", "numpyro", "ADVI-fullrank", order=-4),
        _approximate("pathfinder", "blackjax", "Pathfinder", order=-5),
        # Stan's own: CmdStan's ADVI and multi-path Pathfinder (the bundled Stan only samples).
        _stan_approximate("stan_advi_meanfield", "CmdStan-ADVI-meanfield", order=-6),
        _stan_approximate("stan_advi_fullrank", "CmdStan-ADVI-fullrank", order=-7),
        _stan_approximate("stan_pathfinder", "CmdStan-Pathfinder", order=-8),
    )
}
ENGINE_NAMES = tuple(ENGINES)
SAMPLERS = tuple(name for name in ENGINES if not ENGINES[name].approximate)  # the MCMC engines: ESS pairings
GPU_SAMPLERS = tuple(name for name in SAMPLERS if "gpu" in ENGINES[name].devices)  # the JAX samplers a GPU runs
CPU_PAIR = ("stan", "numpyro")


def entry(name: str) -> EngineEntry:
    if name not in ENGINES:
        raise UnknownChoice("engine", name, ENGINE_NAMES)
    return ENGINES[name]


def family(name: str) -> str | None:
    """STAN or JAX; None for an engine this stanjax does not know (a record from elsewhere)."""
    return ENGINES[name].family if name in ENGINES else None


def get_engine(name: str, front_end: str | None = None) -> Engine:
    """The engine, through ``front_end`` (default: the one a run would use now); imported lazily."""
    found = entry(name)
    front_end = front_end or found.front_end()
    if front_end not in found.front_ends:
        raise UnknownChoice(f"front end of {name}", front_end, found.front_ends)
    module, _, attribute = found.factory.partition(":")
    return getattr(importlib.import_module(module), attribute)(front_end)


def label(
    engine: str,
    front_end: str,
    device: str,
    precision: str,
    chain_method: str,
    matmul_precision: str | None = None,
    threads_per_chain: int = 1,
    isa: str = "",
    program: str = "",
) -> str:
    """The report's name for an engine setup, e.g. "NumPyro-CPU", "NumPyro-GPU-f32", "Stan-CPU", "CmdStan-CPU".

    float32 is marked "-f32" (float64 is the unmarked default); "-tf32" is float32 on a GPU with JAX's default
    matmul precision (TF32 on Ampere and later), as runs made before the runner asked for full float32 matmuls.
    A chain method other than the engine's default on that device is named too ("NumPyro-CPU-vectorized"), and
    Stan's threads per chain where more than one ("Stan-CPU-4threads": its reduce_sum program), and an instruction
    set other than the host's ("NumPyro-CPU-x86-64-v2"), and a Stan program other than the model's own
    ("Stan-CPU-expert"). Setups with different labels are never pooled."""
    found = ENGINES.get(engine)
    name = found.front_ends.get(front_end, f"{engine}[{front_end}]") if found else f"{engine}[{front_end}]"
    text = f"{name}-{device.upper()}"
    if precision == "float32":
        full = device != "gpu" or matmul_precision in ("highest", "float32")
        text += "-f32" if full else "-tf32"
    if found and device in found.defaults and chain_method != found.defaults[device][1]:
        text += f"-{chain_method}"
    if threads_per_chain > 1:
        text += f"-{threads_per_chain}threads"
    if isa not in ("", "native"):
        text += f"-{isa}"
    if program:
        text += f"-{program}"
    return text
