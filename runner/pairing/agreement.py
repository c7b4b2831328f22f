"""The short run of ``stanjax check`` set side by side: per engine (runs valid of runs, median rates, the worst
diagnostics), per parameter (both engines' means and sds, z of their difference), the two engines' agreement per
repeat (the reference gate, one engine's run as the other's reference) and NumPyro's over Stan's ESS/s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stanjax.reports.stats import Ratio, median_ratio
from stanjax.runner.measure import validity
from stanjax.runner.pairing.check_verdicts import ENGINE_NAMES
from stanjax.runner.pairing.pair_files import PAIR


def as_reference(metrics) -> dict:
    """A run's means and sds with their MCSEs, in the shape of a reference posterior (for the reference gate)."""
    return {
        "parameters": {
            name: {
                "mean": metrics.posterior_mean[name],
                "mcse_mean": metrics.posterior_mcse[name],
                "sd": metrics.posterior_sd[name],
                "mcse_sd": metrics.posterior_mcse_sd[name],
            }
            for name in metrics.posterior_mean
        }
    }


def agreement(records: list) -> list[dict]:
    """Per repeat with both engines' runs complete: the reference gate of the Stan run against the NumPyro run."""
    by_repeat: dict[int, dict] = {}
    for record in records:
        if record.status == "ok":
            by_repeat.setdefault(record.repeat, {})[record.engine] = record
    return [
        {
            "repeat": repeat,
            **validity.reference_gate(
                pair["stan"].metrics, as_reference(pair["numpyro"].metrics), "the NumPyro run of the same repeat"
            ),
        }
        for repeat, pair in sorted(by_repeat.items())
        if len(pair) == 2
    ]


def pooled_rhat(files: list[Path], names: list[str]) -> float:
    """The largest R-hat over ``names`` with several runs' chains taken as one run's: every chain started apart,
    as a run's chains do, and with more chains R-hat's own noise is smaller."""
    from stanjax.runner.measure.judge import POSTERIOR
    from stanjax.runner.measure.metrics import max_rhat

    runs = []
    for file in files:
        with np.load(file) as saved:
            runs.append({name: saved[POSTERIOR + name] for name in names})
    return max_rhat({name: np.concatenate([run[name] for run in runs], axis=0) for name in names}, names)


FUNNEL_MIN_DIVERGENT = 10  # divergent draws, at least, whose place in the posterior says something
FUNNEL_SDS = 1.0  # the divergent draws' median log value this many sds of the log below all draws': a funnel


def funnel(files: list[Path], names: list[str]) -> dict | None:
    """Where the divergent draws of these runs crowd: the positive scalar (a scale, Stan's element name) whose log's
    median in the divergent draws lies at least ``FUNNEL_SDS`` of its sds below its median in all draws, the
    farthest, with both medians (``check_verdicts.FUNNEL``'s fields); None where none does or too few diverged."""
    from stanjax.runner.measure.judge import DIVERGING, POSTERIOR

    flags: list[np.ndarray] = []
    values: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for file in files:
        with np.load(file) as saved:
            flags.append(np.asarray(saved[DIVERGING], dtype=bool).ravel())
            for name in names:
                draws = np.asarray(saved[POSTERIOR + name], dtype=float)
                values[name].append(draws.reshape(draws.shape[0] * draws.shape[1], -1))
    divergent = np.concatenate(flags)
    if divergent.sum() < FUNNEL_MIN_DIVERGENT:
        return None
    found: dict | None = None
    for name in names:
        draws = np.concatenate(values[name])
        for j in range(draws.shape[1]):
            x = draws[:, j]
            if not np.all(x > 0):
                continue
            logs = np.log(x)
            spread = logs.std()
            shift = (np.median(logs[divergent]) - np.median(logs)) / spread if spread > 0 else 0.0
            if shift <= -FUNNEL_SDS and (found is None or shift < found["shift"]):
                element = name if draws.shape[1] == 1 else f"{name}[{j + 1}]"
                found = {"name": element, "divergent": np.median(x[divergent]), "overall": np.median(x), "shift": shift}
    return found


def speed_ratio(records: list, numerator: str = "numpyro", denominator: str = "stan") -> Ratio | None:
    """``numerator``'s over ``denominator``'s ESS/s (engine names; NumPyro's over Stan's unless named) as the report
    takes it: per repeat (a paired block, the engines back to back) with valid runs of both, the ratio; their median
    with its order-statistic interval (``reports.stats``)."""
    blocks: dict[int, dict] = {}
    for r in records:
        if r.status == "ok" and r.valid:
            blocks.setdefault(r.block_of, {})[r.engine] = r.metrics.ess_per_s
    ratios = [pair[numerator] / pair[denominator] for pair in blocks.values() if {numerator, denominator} <= set(pair)]
    return median_ratio(ratios) if ratios else None


def engine_rows(records: list) -> list[dict]:
    """Per engine: runs valid of runs, medians of the rates, the worst run's diagnostics (its lowest min bulk ESS,
    highest R-hat: the gates judge each run), divergences summed, the gates that failed."""
    rows = []
    for engine, label in ENGINE_NAMES.items():
        mine = [r for r in records if r.engine == engine]
        if engine not in PAIR and not mine:
            continue
        done = [r for r in mine if r.status == "ok"]

        def median(key, done=done):
            return float(np.median([getattr(r.metrics, key) for r in done])) if done else float("nan")

        rows.append(
            {
                "engine": label,
                "runs": len(mine),
                "valid": sum(r.valid for r in mine),
                "ess_per_s": median("ess_per_s"),
                "ess_per_1000_gradients": median("ess_per_1000_gradients"),
                "ms_per_gradient": median("ms_per_gradient"),
                "min_ess_bulk": min((r.metrics.min_ess_bulk for r in done), default=float("nan")),  # the gate's
                "max_rhat": max((r.metrics.max_rhat for r in done), default=float("nan")),
                "divergences": sum(r.metrics.divergences for r in done),
                "compile_s": max((r.timings.compile_s for r in done), default=float("nan")),
                "failed": sorted(
                    {gate for r in mine for gate in r.failed_gates}
                    | {f"{r.status} (log: {r.log})" for r in mine if r.status != "ok"}
                ),
            }
        )
    return rows


def parameter_rows(records: list, reference: dict | None = None) -> list[dict]:
    """Per parameter (Stan's element names), each engine's mean and sd over its completed runs with the MCSE of
    that mean, and z: the difference of the means over their combined MCSE; the reference's mean and sd beside
    them where one is given. Largest |z| first: where the two sides differ most is what a user reads first."""
    runs = {
        engine: [r.metrics for r in records if r.engine == engine and r.status == "ok"]
        for engine in ("stan", "numpyro")
    }
    if not all(runs.values()):
        return []
    rows = []
    for name in runs["stan"][0].posterior_mean:
        if not all(name in side[0].posterior_mean for side in runs.values()):
            continue
        row = {"parameter": name}
        for engine, side in runs.items():
            row[engine] = {
                "mean": float(np.mean([m.posterior_mean[name] for m in side])),
                "sd": float(np.mean([m.posterior_sd[name] for m in side])),
                "mcse": float(np.sqrt(sum(m.posterior_mcse[name] ** 2 for m in side))) / len(side),
            }
        scale = np.hypot(row["stan"]["mcse"], row["numpyro"]["mcse"])
        row["z"] = float((row["stan"]["mean"] - row["numpyro"]["mean"]) / scale) if scale > 0 else float("nan")
        row["reference"] = (reference or {}).get("parameters", {}).get(name)
        rows.append(row)
    return sorted(rows, key=lambda row: -abs(row["z"]) if np.isfinite(row["z"]) else -np.inf)
