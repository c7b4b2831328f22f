"""Validity gates: a run enters a headline ratio only if it converged and agrees with the reference posterior.

- ``completed``: the run finished and produced draws;
- ``rhat``: max rank-normalised split R-hat <= 1.01 (Vehtari et al. 2021; NaN or inf fails); for a run of many
  short chains that started in superchains (64 chains or more: ``RunConfig.superchains``), max nested R-hat
  <= 1.01 instead (Margossian et al. 2024), with the superchain layout in the gate;
- ``ess``: every parameter's bulk and tail ESS at least 100 per chain (Vehtari et al. 2021: 400 for 4 chains),
  or per superchain for a superchain run (each superchain is one independent start); NaN fails;
- ``finite``: every parameter's posterior mean and its MCSE finite (an inf draw leaves R-hat and ESS finite);
- ``divergences``: at most 1 % of post-warmup draws diverged;
- ``reference``: every scalar parameter's mean is within K sqrt(MCSE_run^2 + MCSE_ref^2) of the reference
  posterior's mean, and its sd within K such combined MCSEs (of the sds) of the reference's sd (checked when a
  reference exists for the same model, size and data hash: our own long Stan run, or an external ground truth),
  except the sd of a parameter whose run's Pareto k-hat is at least KHAT_SD_MAX = 0.25: that sd is recorded as not
  checkable (``sd_not_checkable``: the parameters and their k-hats, with the limit ``sd_khat_limit``), its mean
  still checked.

The sd rule, the same for every model and parameter: an sd's MCSE (Kenney & Keeping's, as arviz and the R package
posterior compute it: the variance of the squared deviations over their ESS) needs a finite fourth moment; with an
infinite one the sd estimate converges slower than 1 / sqrt(ESS), its MCSE estimate means nothing, and a z-score
built on it (on both sides: a ground truth's sd error is scaled by the run's) is luck. Pareto k-hat of the draws
estimates 1 / (number of finite moments) (Vehtari et al. 2024, "Pareto smoothed importance sampling"; posterior's
Pareto-diagnostics vignette: k-hat >= 1/2 means infinite variance, and a mean's MCSE is then not to be trusted), so
the fourth moment is finite only for k < 1/4; equivalently the squared deviations, whose mean the variance is, have
k-hat 2k, and the vignette's rule for a mean applied to them gives the same 1/4. A light-tailed quantity has k-hat
near or below 0 (normal draws: < 0.1 at 4,000 draws), so its sd stays checked; a k-hat of NaN (non-finite or
constant draws) does not exempt an sd. Example: stochastic volatility's mean log volatility
(``gym_sp500-stochastic_volatility_sp500``), whose posterior tail decays as |x|^-3 (k = 1/3: the persistence's
prior keeps mass near 1, where the mean is unidentified): k-hat 0.14-0.59 in 26 runs of 4,000 draws, 0.3 pooled;
a run whose estimate falls below the limit has that sd checked.

Choice of K = 5: for a correct sampler each standardised difference is close to N(0, 1), and the two-sided
tail beyond 5 is 5.7e-7, so a suite run of up to ~17,000 checks has a < 1 % chance of failing any by chance
(Bonferroni). The quick suite makes ~1,600 such checks (means and sds), the default suite ~6,800. A bias is
still caught once it exceeds 5 combined MCSEs, about 0.1 posterior sd at ESS ~ 4000.
"""

from __future__ import annotations

import math

from stanjax.runner.core.run_measures import RunMetrics

RHAT_MAX = 1.01
ESS_PER_CHAIN = 100
DIVERGENCE_MAX_SHARE = 0.01
K_REFERENCE = 5.0
KHAT_SD_MAX = 0.25  # an sd is checked only where the draws' Pareto k-hat says the fourth moment is finite
SD_NOT_CHECKABLE_SHOWN = 10  # the gate names the heaviest-tailed of the exempt parameters, and counts them all


def _worst(
    metrics_value: dict[str, float],
    metrics_se: dict[str, float],
    reference: dict,
    value: str,
    se: str,
    skip=frozenset(),
) -> tuple[str | None, float]:
    """The parameter farthest from the reference in combined MCSEs, and that distance (NaN counts as farthest),
    over the reference's parameters less ``skip``."""
    worst_name, worst_z = None, 0.0
    for name, ref in reference["parameters"].items():
        if name in skip:
            continue
        z = abs(metrics_value[name] - ref[value]) / math.hypot(metrics_se[name], ref[se])
        if not z <= worst_z:  # also catches NaN
            worst_name, worst_z = name, z
    return worst_name, worst_z


def with_sd_errors(reference: dict, metrics: RunMetrics) -> dict:
    """The reference with every sd's MCSE given: where it states none (``mcse_sd`` None: an external ground truth
    gives only the mean's standard error), the mean's scaled as the run's own MCSEs scale (the run's mcse_sd /
    mcse_mean), which carries the posterior's tails: normal theory (se_mean / sqrt 2) understates the sd's error of
    a heavy-tailed quantity. Where the tails leave even that undefined (an infinite fourth moment), the sd is not
    checked at all (:func:`sd_not_checkable`)."""

    def filled(name: str, ref: dict) -> dict:
        if ref["mcse_sd"] is not None:
            return ref
        return {**ref, "mcse_sd": ref["mcse_mean"] * metrics.posterior_mcse_sd[name] / metrics.posterior_mcse[name]}

    return {**reference, "parameters": {name: filled(name, ref) for name, ref in reference["parameters"].items()}}


def sd_not_checkable(metrics: RunMetrics, reference: dict) -> dict[str, float]:
    """The reference's parameters whose sd the run cannot check, with their k-hats, heaviest tail first: the run's
    Pareto k-hat at least :data:`KHAT_SD_MAX` (an infinite fourth moment; see the module docstring). Records made
    before k-hats were kept have none, and every sd is checked as it was."""
    heavy = {
        name: khat
        for name, khat in metrics.posterior_khat.items()
        if name in reference["parameters"] and khat >= KHAT_SD_MAX
    }  # NaN: not exempt
    return dict(sorted(heavy.items(), key=lambda item: -item[1]))


def reference_gate(metrics: RunMetrics, reference: dict | None, why: str) -> dict:
    """Largest standardised distance from the reference's means, and from its sds (where both the run and the
    reference hold the sd's MCSE: records before schema 5 and references made before it do not; and only for
    parameters whose k-hat leaves the sd's MCSE defined: :func:`sd_not_checkable`), each within K (``why``: where
    the reference came from, or why none applies; see :func:`stanjax.runner.measure.references.applicable`)."""
    if reference is None:
        return {"checked": False, "why": why}
    worst_name, worst_z = _worst(metrics.posterior_mean, metrics.posterior_mcse, reference, "mean", "mcse_mean")
    gate = {"checked": True, "source": why, "k": K_REFERENCE, "max_z": worst_z, "worst_parameter": worst_name}
    sd_checked = bool(metrics.posterior_sd) and all("mcse_sd" in ref for ref in reference["parameters"].values())
    sd_passed = True  # an unchecked sd passes
    if sd_checked:
        heavy = sd_not_checkable(metrics, reference)
        worst_sd_name, worst_sd_z = _worst(
            metrics.posterior_sd,
            metrics.posterior_mcse_sd,
            with_sd_errors(reference, metrics),
            "sd",
            "mcse_sd",
            skip=heavy,
        )
        sd_passed = worst_sd_z <= K_REFERENCE
        gate |= {
            "max_z_sd": worst_sd_z,
            "worst_parameter_sd": worst_sd_name,
            "sd_khat_limit": KHAT_SD_MAX,
            "sd_not_checkable": dict(list(heavy.items())[:SD_NOT_CHECKABLE_SHOWN]),
            "sd_not_checkable_count": len(heavy),
        }
        if heavy:
            gate["sd_not_checkable_why"] = (
                f"Pareto k-hat >= {KHAT_SD_MAX}: an infinite fourth moment, so the sd's "
                "MCSE is not defined; the mean is still checked"
            )
    return gate | {
        "sd_checked": sd_checked,
        "passed": worst_z <= K_REFERENCE and sd_passed,
    }


def rhat_gate(metrics: RunMetrics, chains: int) -> dict:
    """R-hat, or nested R-hat where the chains started in superchains (then with the layout: superchain k holds
    chains k*m .. (k+1)*m - 1)."""
    if metrics.superchains:
        value = metrics.max_rhat_nested if metrics.max_rhat_nested is not None else math.nan
        return {
            "statistic": "nested R-hat",
            "max_rhat_nested": value,
            "max_rhat": metrics.max_rhat,
            "superchains": metrics.superchains,
            "chains_per_superchain": chains // metrics.superchains,
            "limit": RHAT_MAX,
            "passed": value <= RHAT_MAX,
        }
    return {
        "statistic": "rank-normalised split R-hat",
        "max_rhat": metrics.max_rhat,
        "limit": RHAT_MAX,
        "passed": metrics.max_rhat <= RHAT_MAX,
    }


def not_gated(parameters_max_rhat: float) -> dict:
    """Beside the R-hat gate of a model judged by its quantities (``ModelSpec.judged_by_quantities``): the
    parameters' largest R-hat, recorded and not gated, and why."""
    return {
        "max_rhat": parameters_max_rhat,
        "gated": False,
        "why": "the parameters have symmetric copies of every mode that no sampler mixes over; the gates judge the "
        "quantities, which every copy shares",
    }


def evaluate(metrics: RunMetrics, chains: int, draws: int, reference: dict | None, why: str) -> dict:
    """The record's ``valid``, ``failed_gates`` and per-gate details (each with its threshold) for a completed run
    of ``chains`` chains of ``draws`` draws. A NaN or inf diagnostic fails its gate (every comparison with NaN is
    false)."""
    ess_limit = ESS_PER_CHAIN * (metrics.superchains or chains)
    non_finite = [
        name
        for name, mean in metrics.posterior_mean.items()
        if not (math.isfinite(mean) and math.isfinite(metrics.posterior_mcse[name]))
    ]
    n_draws = chains * draws
    details = {
        "completed": {"passed": True},
        "rhat": rhat_gate(metrics, chains),
        "ess": {
            "min_ess_bulk": metrics.min_ess_bulk,
            "min_ess_tail": metrics.min_ess_tail,
            "per_chain": ESS_PER_CHAIN,
            "limit": ess_limit,
            "passed": all(
                math.isfinite(ess) and ess >= ess_limit for ess in (metrics.min_ess_bulk, metrics.min_ess_tail)
            ),
        },
        "finite": {"non_finite": non_finite[:10], "passed": not non_finite},
        "divergences": {
            "share": metrics.divergences / n_draws,
            "limit": DIVERGENCE_MAX_SHARE,
            "passed": metrics.divergences <= DIVERGENCE_MAX_SHARE * n_draws,
        },
        "reference": reference_gate(metrics, reference, why),
    }
    failed = [name for name, gate in details.items() if gate.get("checked", True) and not gate["passed"]]
    return {"valid": not failed, "failed_gates": failed, "gates": details}


KHAT_FITTED = 0.7  # Pareto k-hat of importance weights below which an approximation counts as fitted


def accuracy(metrics: RunMetrics, reference: dict | None, why: str) -> dict:
    """An approximation's errors against the reference, in reference sds: the largest |mean - reference mean| and
    |sd - reference sd| over the reference's parameters, each with its parameter. Recorded, not gated: how wrong
    an approximation may be is the reader's question (the report sets it against time); whether it fitted is its
    k-hat's."""
    if reference is None:
        return {"checked": False, "why": why}

    def largest(statistic: dict[str, float], of: str) -> tuple[str, float]:
        errors = {name: abs(statistic[name] - ref[of]) / ref["sd"] for name, ref in reference["parameters"].items()}
        name = max(errors, key=lambda n: (not math.isfinite(errors[n]), errors[n]))  # NaN counts as largest
        return name, errors[name]

    worst_mean, mean_error = largest(metrics.posterior_mean, "mean")
    # records before schema 5 kept no sds
    worst_sd, sd_error = largest(metrics.posterior_sd, "sd") if metrics.posterior_sd else (None, math.nan)
    return {
        "checked": True,
        "source": why,
        "gated": False,
        "unit": "reference sds",
        "max_mean_error": mean_error,
        "worst_parameter_mean": worst_mean,
        "max_sd_error": sd_error,
        "worst_parameter_sd": worst_sd,
    }


def evaluate_approximate(metrics: RunMetrics, khat: float, reference: dict | None, why: str) -> dict:
    """The gates of an approximate engine (``EngineEntry.approximate``): completed, finite, and the Pareto k-hat
    of its importance weights below :data:`KHAT_FITTED` (NaN or inf fails); its errors against the reference beside
    them, not gated (:func:`accuracy`). R-hat, ESS and divergences are a sampler's gates: its draws are resampled
    independent draws of a fitted approximation, so they say nothing about it and are not evaluated."""
    non_finite = [
        name
        for name, mean in metrics.posterior_mean.items()
        if not (math.isfinite(mean) and math.isfinite(metrics.posterior_sd[name]))
    ]
    details: dict[str, dict] = {
        "completed": {"passed": True},
        "khat": {
            "statistic": "Pareto k-hat of the importance weights p / q",
            "khat": khat,
            "limit": KHAT_FITTED,
            "passed": khat < KHAT_FITTED,
        },
        "finite": {"non_finite": non_finite[:10], "passed": not non_finite},
        "accuracy": accuracy(metrics, reference, why),
    }
    failed = [name for name, gate in details.items() if "passed" in gate and not gate["passed"]]
    return {"valid": not failed, "failed_gates": failed, "gates": details}


def failed_run() -> dict:
    """Gates of a run that crashed or timed out."""
    return {"valid": False, "failed_gates": ["completed"], "gates": {"completed": {"passed": False}}}
