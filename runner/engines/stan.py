"""The Stan engine: bundled Stan (httpstan's compiled NUTS) by default, CmdStan through cmdstanpy when one is found.

Both back ends run Stan's own NUTS with diagonal-metric adaptation, one process per chain. Two clocks, as for
every engine: ``user_s`` is the wall time of the sample call, data handed over to draws in NumPy arrays (forking
or starting the chains, sending the data, writing and parsing every draw); the sampler's own time is Stan's: the
chains start together, so the slowest chain's elapsed warmup + sampling, split into warmup and sampling in the
ratio of the per-chain elapsed times summed over chains (with more chains than cores the chains share cores, so
one chain's split alone would not do). Stan's per-chain clocks are kept in ``detail``.

This module is the engine: its front ends, programs and threads. The back ends are modules of their own
(:mod:`stanjax.runner.engines.stan_bundled`, :mod:`stanjax.runner.engines.stan_cmdstan`), and both read what Stan
reports through :mod:`stanjax.runner.engines.stan_output`.
"""

from __future__ import annotations

import re
from pathlib import Path

from stanjax.models import ModelSpec, UsageError
from stanjax.runner.core import engine_registry
from stanjax.runner.core.config import Placement, RunConfig, is_expert, stanc_options
from stanjax.runner.core.engine_registry import SampleResult
from stanjax.runner.engines.stan_bundled import HttpstanBackend
from stanjax.runner.engines.stan_cmdstan import CmdStanBackend
from stanjax.runner.engines.stanc import stanc

# reduce_sum's grainsize for the threaded programs: 1 lets TBB's scheduler size the slices (the Stan User's Guide's
# starting point, and the one setting that suits every model and size).
GRAINSIZE = 1


def program(spec: ModelSpec, placement: Placement) -> Path:
    """The program a placement runs: the model's expert rewrite where asked, its reduce_sum one with more than
    one thread per chain."""
    if is_expert(placement.program):
        if spec.stan_expert_file is None:
            raise UsageError(f"{spec.id} has no expert program (stan/expert/{spec.model_name}.stan)")
        if placement.threads_per_chain > 1:
            raise UsageError(f"{spec.id}: the expert program has no threaded variant: run it with one thread a chain")
        return spec.stan_expert_file
    if placement.threads_per_chain > 1:
        if spec.stan_threaded_file is None:
            raise UsageError(f"{spec.id} has no threaded program (stan/threaded/{spec.model_name}.stan)")
        return spec.stan_threaded_file
    return spec.stan_file


def check_program(spec: ModelSpec) -> None:
    """Run stanc (bundled with httpstan) on the spec's programs (its threaded and expert ones too); raise
    UsageError with stanc's message if one fails."""
    for stan_file in filter(None, (spec.stan_file, spec.stan_threaded_file, spec.stan_expert_file)):
        check_file(stan_file, str(stan_file.relative_to(spec.stan_dir)))


def check_file(stan_file: Path, shown: str) -> None:
    """Raise UsageError, as ``shown``, with stanc's message (which names ``stan_file`` and the line) if the program
    does not compile."""
    returncode, _, errors = stanc(stan_file, stan_file.read_text())
    if returncode != 0:
        lines = [line.strip() for line in errors.splitlines()]
        message = " ".join(line for line in lines if line and not re.match(r"(\d+:|-+$|\^)", line))
        raise UsageError(f"{shown} does not compile: {message}")


class StanEngine:
    """Stan through one front end: "bundled" (httpstan's NUTS, driven here) or "cmdstan" (cmdstanpy)."""

    name = "stan"

    def __init__(self, front_end: str = "bundled"):
        self.backend: CmdStanBackend | HttpstanBackend
        if front_end == "cmdstan":
            cmdstan = engine_registry.find_cmdstan()
            if cmdstan is None:
                raise UsageError("CmdStan was asked for, but none is installed (set CMDSTAN)")
            self.backend = CmdStanBackend(cmdstan)
        elif front_end == "bundled":
            self.backend = HttpstanBackend()
        else:
            raise UsageError(f"the Stan engine cannot run through the {front_end!r} front end")

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        return self.backend.compile(program(spec, placement), placement.isa, stanc_options(placement.program))

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
