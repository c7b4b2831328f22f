"""Stan's own approximations through CmdStan, judged as the JAX side's (:mod:`stanjax.runner.engines.approximate`):

- ``stan_advi_meanfield`` and ``stan_advi_fullrank``: CmdStan's ADVI (Kucukelbir et al. 2017) with its defaults,
  as a Stan user runs it (step size eta adapted, ``tol_rel_obj`` 0.01 stopping the ascent when the ELBO settles,
  one gradient draw a step), at most ``config.warmup`` iterations; q's own draws kept, as ADVI gives them;
- ``stan_pathfinder``: CmdStan's multi-path Pathfinder (Zhang et al. 2022), one path a chain, run on threads, at
  most ``config.warmup`` L-BFGS iterations a path, its own PSIS resampling off so that every path's draws come
  back with their log q, then resampled here as the JAX side's.

Either way CmdStan draws ``IMPORTANCE_DRAWS`` times the draws the run keeps, each with the model's log density
(``log_p__``; Pathfinder's ``lp__``) and the approximation's (``log_g__``, up to a constant the same for every
draw; Pathfinder's ``lp_approx__``), and :func:`~stanjax.runner.engines.importance.weigh` smooths their weights
and keeps ``chains x draws``: the same k-hat, the same gates, the same records as the JAX side.

The bundled Stan (httpstan) exposes only NUTS: these engines need a CmdStan installation, and are refused with
the reason, before anything runs, where none is found.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from stanjax.models import ModelSpec, UsageError
from stanjax.runner.core import engine_registry
from stanjax.runner.core.config import Placement, RunConfig
from stanjax.runner.core.engine_registry import NO_CMDSTAN, SampleResult, SamplerStats, Timings
from stanjax.runner.engines.approximate import PATHFINDER_ELBO_DRAWS
from stanjax.runner.engines.importance import IMPORTANCE_DRAWS, weigh
from stanjax.runner.engines.stan_cmdstan import CmdStanBackend, json_data

# The columns of CmdStan's output that weigh a draw: (the model's log density, the approximation's).
LOG_DENSITIES = {"advi": ("log_p__", "log_g__"), "pathfinder": ("lp__", "lp_approx__")}


class StanApproximateEngine:
    """One of CmdStan's approximations (``advi_meanfield``, ``advi_fullrank``, ``pathfinder``) on the model's Stan
    program (its plain one: ADVI is one process, Pathfinder threads its paths)."""

    def __init__(self, method: str):
        if method not in ("advi_meanfield", "advi_fullrank", "pathfinder"):
            raise ValueError(f"unknown approximation {method!r}")
        cmdstan = engine_registry.find_cmdstan()
        if cmdstan is None:
            raise UsageError(NO_CMDSTAN)
        self.method = method
        self.name = f"stan_{method}"
        self.backend = CmdStanBackend(cmdstan)

    def compile(self, spec: ModelSpec, placement: Placement = Placement()):
        return self.backend.compile(spec.stan_file, placement.isa, threaded=self.method == "pathfinder")

    def sample(
        self, handle, data: dict, config: RunConfig, seed: int, placement: Placement = Placement()
    ) -> SampleResult:
        if placement.device != "cpu":
            raise ValueError("Stan runs on the CPU only")
        kept = config.chains * config.draws
        n_drawn = IMPORTANCE_DRAWS * kept
        with tempfile.TemporaryDirectory(prefix="stanjax-cmdstan-") as output_dir:
            start = time.perf_counter()
            if self.method == "pathfinder":
                fit, table, facts = self._pathfinder(handle["model"], data, config, seed, n_drawn, output_dir)
            else:
                fit, table, facts = self._advi(handle["model"], data, config, seed, n_drawn, output_dir)
            call_s = time.perf_counter() - start
            start = time.perf_counter()
            draws, log_weights = draws_and_log_weights(fit, table, LOG_DENSITIES[self.method.split("_")[0]])
            chosen, weighing = weigh(log_weights, kept, seed, resample=self.method == "pathfinder")
            kept_draws = {
                name: values[chosen].reshape(config.chains, config.draws, *values.shape[1:])
                for name, values in draws.items()
            }
            keeping_s = time.perf_counter() - start
        timings = Timings(
            compile_s=handle["compile_s"],
            warmup_s=call_s,
            sampling_s=keeping_s,
            user_s=call_s + keeping_s,
            source="warmup: the wall of cmdstanpy's call (CmdStan's fit and its draws, written to CSV and read "
            "back); sampling: weighing the draws (log densities from CmdStan's columns, Pareto smoothing) and "
            "keeping them, here; user: both",
            compile_cached=handle["cached"],
            detail={"call_s": call_s, "keeping_s": keeping_s},
        )
        stats = SamplerStats(
            n_leapfrog=np.zeros((config.chains, config.draws), dtype=np.int64),  # no gradient after fitting
            divergent=np.zeros((config.chains, config.draws), dtype=bool),
            warmup_gradients=facts.pop("gradients", None),
        )
        info = {**self.backend.info(handle["isa"]), "method": self.name, "iterations": config.warmup, **facts}
        return SampleResult(kept_draws, timings, stats, info | weighing)

    def _advi(self, model, data: dict, config: RunConfig, seed: int, n_drawn: int, output_dir: str):
        """CmdStan's ADVI with its defaults, at most ``config.warmup`` iterations. Whether it converged (its
        relative ELBO change under ``tol_rel_obj``) is a fact of the record, read from its console, not a refusal:
        the k-hat judges the fit."""
        fit = model.variational(
            data=json_data(data),
            seed=seed,
            inits=config.init_radius,
            algorithm=self.method.removeprefix("advi_"),
            iter=config.warmup,
            draws=n_drawn,
            require_converged=False,
            output_dir=output_dir,
            show_console=False,
        )
        console = Path(fit.runset.stdout_files[0]).read_text(errors="replace")
        return fit, fit.variational_sample, {"eta": fit.eta, **advi_console_facts(console)}

    @staticmethod
    def _pathfinder(model, data: dict, config: RunConfig, seed: int, n_drawn: int, output_dir: str):
        """Multi-path Pathfinder, a path per chain on as many threads as the run has cores (up to the paths), each
        path at most ``config.warmup`` L-BFGS iterations and ``n_drawn / paths`` draws, CmdStan's resampling off."""
        threads = min(config.chains, len(os.sched_getaffinity(0)))
        fit = model.pathfinder(
            data=json_data(data),
            seed=seed,
            inits=config.init_radius,
            num_paths=config.chains,
            max_lbfgs_iters=config.warmup,
            num_elbo_draws=PATHFINDER_ELBO_DRAWS,
            num_single_draws=n_drawn // config.chains,
            draws=n_drawn,
            psis_resample=False,
            calculate_lp=True,
            num_threads=threads,
            output_dir=output_dir,
            show_console=False,
        )
        console = Path(fit._runset.stdout_files[0]).read_text(errors="replace")
        facts = {"paths": config.chains, "elbo_draws": PATHFINDER_ELBO_DRAWS, "threads": threads}
        return fit, fit.draws(), facts | pathfinder_console_facts(console)


def draws_and_log_weights(fit, table: np.ndarray, columns: tuple[str, str]) -> tuple[dict, np.ndarray]:
    """From CmdStan's output table (a row per draw): each Stan variable's draws, (draws, *shape), and each draw's
    log weight, the model's log density less the approximation's (``columns``)."""
    names = list(fit.column_names)
    log_p, log_q = (table[:, names.index(column)] for column in columns)
    draws = {name: var.extract_reshape(table) for name, var in fit.metadata.stan_vars.items()}
    return draws, log_p - log_q


ADVI_ROW = re.compile(r"^\s*(\d+)\s+(-?[\d.]+(?:e[-+]?\d+)?)\s", re.M | re.I)


def advi_console_facts(console: str) -> dict:
    """What ADVI's console says of its ascent: the iterations it ran (its last ELBO row), that ELBO's negative as
    ``final_loss`` (as the JAX side's), and whether it converged (not where it says it "may not have")."""
    ascent = console.partition("Begin stochastic gradient ascent")[2]
    rows = ADVI_ROW.findall(ascent)
    return {
        "iterations_run": int(rows[-1][0]) if rows else None,
        "final_loss": -float(rows[-1][1]) if rows else None,
        "converged": "CONVERGED" in ascent and "may not have converged" not in console,
        "gradients": None,  # eta's adaptation and the ELBO's evaluations are not counted in its console
    }


PATHFINDER_BEST = re.compile(r"Path \[(\d+)\] ?:\s*Best Iter: \[(\d+)\].*?evaluations: \((\d+)\)")


def pathfinder_console_facts(console: str) -> dict:
    """Per path, from Pathfinder's console: the iteration of its best ELBO and its log-density evaluations (with
    gradients), summed as the run's gradients; None where the console does not say."""
    found = PATHFINDER_BEST.findall(console)
    return {
        "best_iterations": [int(best) for _, best, _ in found] or None,
        "gradients": sum(int(evaluations) for *_, evaluations in found) if found else None,
    }


def stan_advi_meanfield(front_end: str = "cmdstan") -> StanApproximateEngine:
    return StanApproximateEngine("advi_meanfield")


def stan_advi_fullrank(front_end: str = "cmdstan") -> StanApproximateEngine:
    return StanApproximateEngine("advi_fullrank")


def stan_pathfinder(front_end: str = "cmdstan") -> StanApproximateEngine:
    return StanApproximateEngine("pathfinder")
