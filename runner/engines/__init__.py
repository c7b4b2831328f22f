"""Engines: one adapter per sampler front end, all with the same two calls.

``compile(spec) -> handle`` builds (or fetches from cache) the model; ``sample(handle, data, config, seed,
placement)`` runs the sampler where the placement says and returns a :class:`SampleResult`. Engines never compute ESS or R-hat: that is
:mod:`runner.metrics`' job, one code path for all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from models import ModelSpec, UnknownChoice
from runner.config import Placement, RunConfig


@dataclass
class Timings:
    """Wall-clock seconds. ``run_s`` = warmup + sampling is the wall time after compilation (the ESS/s
    denominator). ``source`` says how the split was obtained; ``detail`` holds the engine's own clocks."""

    compile_s: float
    warmup_s: float
    sampling_s: float
    source: str
    compile_cached: bool = False
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def run_s(self) -> float:
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

    def compile(self, spec: ModelSpec) -> Any: ...

    def sample(self, handle: Any, data: dict, config: RunConfig, seed: int,
               placement: Placement = Placement()) -> SampleResult: ...


# stan: Stan's NUTS (pystan, or CmdStan when installed); numpyro: NumPyro's NUTS; blackjax_nuts: BlackJAX NUTS
# with Stan-style window adaptation per chain; blackjax_chees: jittered HMC tuned by ChEES across the chain batch.
JAX_ENGINES = ("numpyro", "blackjax_nuts", "blackjax_chees")
ENGINE_NAMES = ("stan", *JAX_ENGINES)
CPU_PAIR = ("stan", "numpyro")


def get_engine(name: str) -> Engine:
    """Import lazily: a Stan run never imports JAX and a JAX run never starts httpstan."""
    if name == "stan":
        from runner.engines.stan import StanEngine

        return StanEngine()
    if name == "numpyro":
        from runner.engines.numpyro import NumPyroEngine

        return NumPyroEngine()
    if name in ("blackjax_nuts", "blackjax_chees"):
        from runner.engines.blackjax import BlackJAXEngine

        return BlackJAXEngine(name.removeprefix("blackjax_"))
    raise UnknownChoice("engine", name, ENGINE_NAMES)
