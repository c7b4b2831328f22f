"""One code path for every engine's draws: arviz's rank-normalised ESS and R-hat, then the derived rates."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import arviz_stats as az  # arviz's diagnostics without its plotting half (matplotlib): a second off every worker
import numpy as np
from arviz_base import from_dict
from arviz_stats.base import array_stats

from stanjax.runner.core.engine_registry import SampleResult
from stanjax.runner.core.run_measures import RunMetrics


def _drop_lazy_jax_placeholders() -> None:
    """arviz_base puts lazy placeholder modules for ``jax`` and ``numpyro`` in ``sys.modules`` when imported.
    scipy's array-API helpers, under arviz-stats' Pareto k-hat, read ``sys.modules["jax"].Array``, which loads the
    placeholder: JAX would be imported into every Stan worker, and bundled Stan then refuses to fork a later
    batch's chains (see ``runner.engines.stan_bundled``). Placeholders not yet loaded are dropped; a process that wants
    JAX imports the real module."""
    for name in ("jax", "numpyro"):
        # typeshed omits the private _LazyModule (the class of LazyLoader's modules), which this test needs
        if isinstance(sys.modules.get(name), importlib.util._LazyModule):  # type: ignore[attr-defined]
            del sys.modules[name]


_drop_lazy_jax_placeholders()


def _flat(dataset) -> dict[str, float]:
    """Per-variable arrays -> {"beta[3]": value, ...} with 1-based Stan-style indices."""
    out = {}
    for name, values in dataset.items():
        values = np.asarray(values)
        if values.ndim == 0:
            out[name] = float(values)
            continue
        for index in np.ndindex(values.shape):
            out[f"{name}[{','.join(str(i + 1) for i in index)}]"] = float(values[index])
    return out


def max_rhat(draws: dict[str, np.ndarray], names: list[str]) -> float:
    """The largest rank-normalised split R-hat over the scalars of ``names`` (NaN where any is NaN)."""
    posterior = from_dict({"posterior": {name: draws[name] for name in names}})
    return float(np.max(list(_flat(az.rhat(posterior).ds).values())))


HELD_OUT_LIKELIHOOD = "lik_test"  # a model judged by its predictions: each held-out point's likelihood a draw


def held_out_lpd(posterior_mean: dict[str, float], posterior_mcse: dict[str, float]) -> tuple[float, float]:
    """The held-out log predictive density sum_j log E[lik_test[j]] from a run's posterior means of the held-out
    likelihoods, and its MCSE by the delta method from their MCSEs (the points' errors taken as independent)."""
    points = [name for name in posterior_mean if re.fullmatch(rf"{HELD_OUT_LIKELIHOOD}\[\d+\]", name)]
    if not points:
        raise ValueError(f"no {HELD_OUT_LIKELIHOOD}[j] in the record's summaries")
    lpd = sum(math.log(posterior_mean[name]) for name in points)
    return lpd, math.sqrt(sum((posterior_mcse[name] / posterior_mean[name]) ** 2 for name in points))


QUANTILES = (0.05, 0.5, 0.95)


def parameter_table(
    draws: dict[str, np.ndarray], names: list[str], quantiles: bool = False
) -> dict[str, dict[str, float]]:
    """Per scalar parameter: mean, sd and their MCSEs, bulk and tail ESS, R-hat (draws: (chain, draw, ...));
    with ``quantiles`` (references) also the 5/50/95 % quantiles ``q5``, ``q50``, ``q95`` and their MCSEs."""
    posterior = from_dict({"posterior": {name: draws[name] for name in names}})
    tasks: dict[str, Callable] = {
        "mean": lambda: posterior["posterior"].ds.mean(dim=("chain", "draw")),
        "sd": lambda: posterior["posterior"].ds.std(dim=("chain", "draw"), ddof=1),
        "mcse_mean": lambda: az.mcse(posterior).ds,
        "mcse_sd": lambda: az.mcse(posterior, method="sd").ds,
        "ess_bulk": lambda: az.ess(posterior, method="bulk").ds,
        "ess_tail": lambda: az.ess(posterior, method="tail").ds,
        "rhat": lambda: az.rhat(posterior).ds,
    }
    for prob in QUANTILES if quantiles else ():
        tasks |= _quantile_tasks(posterior, prob)
    flat = {column: _flat(values) for column, values in concurrently(tasks).items()}
    return {name: {column: flat[column][name] for column in flat} for name in flat["mean"]}


def _quantile_tasks(posterior, prob: float) -> dict[str, Callable]:
    """The ``prob`` quantile of each scalar and its MCSE, as :func:`parameter_table`'s tasks."""
    label = f"q{round(100 * prob)}"
    return {
        label: lambda: posterior["posterior"].ds.quantile(prob, dim=("chain", "draw")).drop_vars("quantile"),
        f"mcse_{label}": lambda: az.mcse(posterior, method="quantile", prob=prob).ds,
    }


def concurrently(tasks: dict[str, Callable]) -> dict:
    """Each task's result, computed on as many threads as this thread's cores (their sorts and FFTs release the
    GIL): eight schools' 4 x 50,000 draws were judged in 2.0 s on one of two cores, 1.1 s on both."""
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        futures = {name: pool.submit(task) for name, task in tasks.items()}
    return {name: future.result() for name, future in futures.items()}


def pareto_khat(draws: np.ndarray) -> np.ndarray:
    """Pareto k-hat of each scalar in ``draws`` (chain, draw, ...), both tails, as arviz-stats estimates it (Vehtari
    et al. 2024), one call over all of them; NaN where a scalar's draws are not finite or are constant, as the R
    package posterior returns. 1 / k-hat estimates how many of the posterior's moments are finite."""
    draws = np.asarray(draws, dtype=float)
    with np.errstate(invalid="ignore"):
        degenerate = ~np.all(np.isfinite(draws), axis=(0, 1)) | (np.ptp(draws, axis=(0, 1)) == 0)
    # arviz-stats raises on a constant tail: such scalars are fitted on stand-in draws, then set to NaN
    stand_in = np.arange(draws.shape[0] * draws.shape[1], dtype=float)
    stand_in = stand_in.reshape(draws.shape[:2] + (1,) * (draws.ndim - 2))
    prepared = np.where(degenerate, stand_in, draws)
    try:
        khat = _arviz_khat(prepared)
    except ValueError:  # a constant tail in varying draws (a stuck chain repeating its extreme): scalar by scalar
        scalars = prepared.reshape(prepared.shape[0], prepared.shape[1], -1)
        khat = np.array([_arviz_khat_or_nan(scalars[:, :, i]) for i in range(scalars.shape[2])])
        khat = khat.reshape(prepared.shape[2:])
    return np.where(degenerate, np.nan, np.asarray(khat, dtype=float))


def _arviz_khat(draws: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # arviz-stats warns on short tails; the estimate is still its own
        return array_stats.pareto_khat(draws, chain_axis=0, draw_axis=1)


def _arviz_khat_or_nan(draws: np.ndarray) -> float:
    """One scalar's k-hat; NaN where arviz-stats cannot fit a tail ("All tail values are the same")."""
    try:
        return float(_arviz_khat(draws))
    except ValueError:
        return np.nan


def tail_khats(draws: dict[str, np.ndarray], names: list[str]) -> dict[str, float]:
    """Per scalar parameter (flat names, as :func:`parameter_table`'s): :func:`pareto_khat` of its draws."""
    return _flat({name: pareto_khat(draws[name]) for name in names})


def per_gradient(amount: float, gradients: int) -> float:
    """``amount`` per gradient evaluation; NaN where the draws took none (an approximate engine draws from its fitted
    approximation: its gradients went into training, ``gradients_warmup``)."""
    return amount / gradients if gradients else math.nan


def summarise(result: SampleResult, parameter_names: list[str], superchain_ids: list[int] | None = None) -> RunMetrics:
    """Diagnostics and rates for the model's declared parameters.

    ``ess_per_s`` = min bulk ESS / ``user_s`` (data handed over to draws in host arrays, compile excluded).
    ``ms_per_gradient`` = the sampling phase's share of ``user_s`` (split as the sampler's own clock splits
    warmup and sampling) in ms / gradient evaluations summed over chains: the throughput of the whole run, on the
    one clock every front end keeps alike. (Stan's per-chain elapsed times are not that clock: where a front end
    does not start every chain at once, the slowest chain is not the span.) A NaN or inf diagnostic of any
    parameter (a constant chain, a non-finite draw) propagates into the minimum ESS and maximum R-hat, so the
    validity gates see it; ``worst_parameter`` names it. With ``superchain_ids`` (each chain's superchain, for
    chains that started in superchains) also the largest nested R-hat. Every parameter's Pareto k-hat goes with its
    sd: the reference gate checks an sd only where k-hat says its MCSE is defined (:mod:`stanjax.runner.measure.validity`).
    """
    table, khats = concurrently(
        {
            "table": lambda: parameter_table(result.draws, parameter_names),
            "khat": lambda: tail_khats(result.draws, parameter_names),
        }
    ).values()
    nested = None
    if superchain_ids is not None:
        posterior = from_dict({"posterior": {name: result.draws[name] for name in parameter_names}})
        nested = float(
            np.max([value for value in _flat(az.rhat_nested(posterior, superchain_ids=superchain_ids).ds).values()])
        )
    ess_bulk = {name: row["ess_bulk"] for name, row in table.items()}
    worst = min(ess_bulk, key=lambda k: (np.isfinite(ess_bulk[k]), ess_bulk[k]))
    min_bulk = float(np.min(list(ess_bulk.values())))
    timings = result.timings
    sampling_gradients = int(result.stats.n_leapfrog.sum())
    return RunMetrics(
        n_parameters=len(table),
        min_ess_bulk=min_bulk,
        min_ess_tail=float(np.min([row["ess_tail"] for row in table.values()])),
        worst_parameter=worst,
        max_rhat=float(np.max([row["rhat"] for row in table.values()])),
        divergences=int(result.stats.divergent.sum()),
        ess_per_s=min_bulk / timings.user_s,
        gradients_sampling=sampling_gradients,
        gradients_warmup=result.stats.warmup_gradients,
        ms_per_gradient=per_gradient(
            1000.0 * timings.user_s * (timings.sampling_s / timings.sampler_s), sampling_gradients
        ),
        ess_per_1000_gradients=per_gradient(1000.0 * min_bulk, sampling_gradients),
        mean_leapfrog_per_draw=float(result.stats.n_leapfrog.mean()),
        posterior_mean={name: row["mean"] for name, row in table.items()},
        posterior_mcse={name: row["mcse_mean"] for name, row in table.items()},
        posterior_sd={name: row["sd"] for name, row in table.items()},
        posterior_mcse_sd={name: row["mcse_sd"] for name, row in table.items()},
        posterior_khat=khats,
        superchains=len(set(superchain_ids)) if superchain_ids is not None else 0,
        max_rhat_nested=nested,
    )
