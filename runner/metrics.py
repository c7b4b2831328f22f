"""One code path for every engine's draws: arviz's rank-normalised ESS and R-hat, then the derived rates."""

from __future__ import annotations

import math

import arviz as az
import numpy as np
from arviz_base import from_dict

from runner.engines import SampleResult


def _flat(dataset) -> dict[str, np.ndarray]:
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


def summarise(result: SampleResult, parameter_names: list[str]) -> dict:
    """Diagnostics and rates for the model's declared parameters.

    ``ess_per_s`` = min bulk ESS / run seconds (warmup + sampling wall, compile excluded);
    ``ess_per_s_cold`` adds compile seconds. ``ms_per_gradient`` = sampling wall ms / gradient evaluations
    summed over chains (throughput of the whole run, whatever the parallelism).
    """
    posterior = from_dict({"posterior": {name: result.draws[name] for name in parameter_names}})
    ess_bulk = _flat(az.ess(posterior, method="bulk").ds)
    ess_tail = _flat(az.ess(posterior, method="tail").ds)
    rhat = _flat(az.rhat(posterior).ds)
    worst = min(ess_bulk, key=lambda k: (math.isnan(ess_bulk[k]), ess_bulk[k]))
    min_bulk = float(np.nanmin(list(ess_bulk.values())))
    timings = result.timings
    sampling_gradients = int(result.stats.n_leapfrog.sum())
    total_gradients = sampling_gradients + (result.stats.warmup_gradients or 0)
    return {
        "n_parameters": len(ess_bulk),
        "min_ess_bulk": min_bulk,
        "min_ess_tail": float(np.nanmin(list(ess_tail.values()))),
        "worst_parameter": worst,
        "max_rhat": float(np.nanmax(list(rhat.values()))),
        "divergences": int(result.stats.divergent.sum()),
        "ess_per_s": min_bulk / timings.run_s,
        "ess_per_s_cold": min_bulk / (timings.run_s + timings.compile_s),
        "gradients_sampling": sampling_gradients,
        "gradients_warmup": result.stats.warmup_gradients,
        "ms_per_gradient": 1000.0 * timings.sampling_s / sampling_gradients,
        "ess_per_1000_gradients": 1000.0 * min_bulk / sampling_gradients,
        "mean_leapfrog_per_draw": float(result.stats.n_leapfrog.mean()),
        "posterior_mean": _flat(posterior["posterior"].ds.mean(dim=("chain", "draw"))),
        "posterior_mcse": _flat(az.mcse(posterior).ds),
    }
