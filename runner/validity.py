"""Validity gates: a run enters a headline ratio only if it converged and agrees with the reference posterior.

- ``completed``: the run finished and produced draws;
- ``rhat``: max rank-normalised R-hat <= 1.01;
- ``divergences``: at most 1 % of post-warmup draws diverged;
- ``reference``: every scalar parameter's mean is within K sqrt(MCSE_run^2 + MCSE_ref^2) of the reference
  posterior's mean (checked when a reference exists for the same model, size and data hash).

Choice of K = 5: for a correct sampler each standardised difference is close to N(0, 1), and the two-sided
tail beyond 5 is 5.7e-7, so a suite run of up to ~17,000 parameter checks has a < 1 % chance of failing any
by chance (Bonferroni). The quick suite makes ~800 such checks and the default suite ~3,400. A bias is
still caught once it exceeds 5 combined MCSEs, about 0.1 posterior sd at ESS ~ 4000.
"""

from __future__ import annotations

import math

RHAT_MAX = 1.01
DIVERGENCE_MAX_SHARE = 0.01
K_REFERENCE = 5.0


def reference_gate(metrics: dict, reference: dict | None, data_hash: str) -> dict:
    """Largest standardised distance from the reference mean, and whether it is within K."""
    if reference is None:
        return {"checked": False, "why": "no reference for this model and size"}
    if reference["header"]["data_hash"] != data_hash:
        return {"checked": False, "why": "the reference was made for other data (data hash differs)"}
    worst_name, worst_z = None, 0.0
    for name, ref in reference["parameters"].items():
        se = math.hypot(metrics["posterior_mcse"][name], ref["mcse_mean"])
        z = abs(metrics["posterior_mean"][name] - ref["mean"]) / se
        if not z <= worst_z:  # also catches NaN
            worst_name, worst_z = name, z
    return {"checked": True, "k": K_REFERENCE, "max_z": worst_z, "worst_parameter": worst_name,
            "passed": worst_z <= K_REFERENCE}


def evaluate(metrics: dict, n_draws: int, reference: dict | None, data_hash: str) -> dict:
    """The record's ``valid``, ``failed_gates`` and per-gate details for a completed run."""
    details = {
        "completed": {"passed": True},
        "rhat": {"max_rhat": metrics["max_rhat"], "limit": RHAT_MAX, "passed": metrics["max_rhat"] <= RHAT_MAX},
        "divergences": {"share": metrics["divergences"] / n_draws, "limit": DIVERGENCE_MAX_SHARE,
                        "passed": metrics["divergences"] <= DIVERGENCE_MAX_SHARE * n_draws},
        "reference": reference_gate(metrics, reference, data_hash),
    }
    failed = [name for name, gate in details.items() if gate.get("checked", True) and not gate["passed"]]
    return {"valid": not failed, "failed_gates": failed, "gates": details}


def failed_run() -> dict:
    """Gates of a run that crashed or timed out."""
    return {"valid": False, "failed_gates": ["completed"], "gates": {"completed": {"passed": False}}}
