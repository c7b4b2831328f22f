"""Compare two record sets (BASE, NEW) the way a nightly job must: flag a speed change only when it is beyond a
threshold AND significant over repeats (asv's rule), and check correctness separately against gold values
(Stan's performance tests: every posterior mean within 0.3 reference sd).

Speed: per measurement (same machine, model, sizes, settings, data and engine setup: ``MeasurementKey``), the
ratio NEW ÷ BASE of median ESS/s and of median ms per gradient over valid runs, with a two-sided Mann–Whitney U test between the repeats. With 5
repeats a side the smallest attainable p is 0.008; with 3 it is 0.1, which can never pass alpha = 0.05, so the
nightly suite runs 5 repeats. Correctness: NEW runs whose posterior means leave the gold band, or a group valid
in BASE with no valid run in NEW.

Only clean runs (a load recorded, not "loaded") that no entry of results/SUPERSEDED covers are compared: a run
timed on a busy machine, or under a known bug, would flag a regression that is not one. How many were left out,
and why, is part of the result.
"""

from __future__ import annotations

import statistics

from stanjax.runner.core import environment, records, superseded
from stanjax.runner.core.engine_registry import STAN, family
from stanjax.runner.core.records import MeasurementKey, RunRecord
from stanjax.runner.core.run_measures import RunMetrics
from stanjax.runner.measure import references

THRESHOLD = 0.10
ALPHA = 0.05
GOLD_SD = 0.3


def speed_change(base: list[float], new: list[float], higher_is_better: bool, threshold: float, alpha: float) -> dict:
    """NEW ÷ BASE of the medians, the Mann–Whitney p-value, and whether that is a regression."""
    from scipy.stats import mannwhitneyu  # scipy.stats takes a second to import: only where a comparison runs

    ratio = statistics.median(new) / statistics.median(base)
    p_value = float(mannwhitneyu(new, base, alternative="two-sided").pvalue) if min(len(base), len(new)) > 1 else 1.0
    worse = ratio < 1 / (1 + threshold) if higher_is_better else ratio > 1 + threshold
    better = ratio > 1 + threshold if higher_is_better else ratio < 1 / (1 + threshold)
    status = "unchanged"
    if p_value < alpha and (worse or better):
        status = "regressed" if worse else "improved"
    return {
        "ratio": ratio,
        "p_value": p_value,
        "status": status,
        "base_median": statistics.median(base),
        "new_median": statistics.median(new),
    }


def valid_metrics(record: RunRecord) -> RunMetrics:
    """A valid run's metrics: a run without them fails the "completed" gate, so a valid run has them."""
    assert record.metrics is not None, f"valid run {record.run_id} has no metrics"
    return record.metrics


def gold_check(record: RunRecord) -> dict:
    """The largest |posterior mean − reference mean| / reference sd over the record's parameters."""
    reference, why = references.applicable(record.model_id, record.size, record.config.resize, record.data_hash)
    if reference is None:
        return {"status": "unchecked", "reason": why}
    distances = {
        name: abs(mean - reference["parameters"][name]["mean"]) / reference["parameters"][name]["sd"]
        for name, mean in valid_metrics(record).posterior_mean.items()
        if name in reference["parameters"]
    }
    worst = max(distances, key=distances.__getitem__)
    return {
        "status": "passed" if distances[worst] <= GOLD_SD else "failed",
        "worst_parameter": worst,
        "worst_sd": distances[worst],
    }


def describe(recs: list[RunRecord]) -> dict:
    """What a record set is: its campaigns, commits, machines, dates and package versions."""
    versions: dict[str, set] = {}
    for r in recs:
        for package in environment.PACKAGES:
            versions.setdefault(package, set()).add(r.provenance.versions.get(package))
    stan = {r.engine_info.get("stan_version") for r in recs if family(r.engine) == STAN} - {None}
    if stan:
        versions["Stan"] = stan
    return {
        "campaigns": sorted({r.campaign_id for r in recs}),
        "commits": sorted({r.provenance.git_commit or "unknown" for r in recs}),
        "machines": sorted({r.machine for r in recs}),
        "dates": [min(r.created for r in recs), max(r.created for r in recs)],
        "versions": {k: sorted(map(str, v)) for k, v in versions.items()},
    }


def left_out(recs: list[RunRecord], entries: tuple[superseded.Entry, ...]) -> dict[str, int]:
    """How many runs the comparison leaves out, per reason (``superseded.left_out``)."""
    counts: dict[str, int] = {}
    for r in recs:
        if reason := superseded.left_out(r, entries):
            counts[reason] = counts.get(reason, 0) + 1
    return counts


def measurement_entry(
    key: MeasurementKey, b: list[RunRecord], n: list[RunRecord], threshold: float, alpha: float, only: str = ""
) -> dict:
    """One measurement's entry: its valid runs on each side, the speed change where both have some (a
    regression where either measure regressed), a correctness regression where BASE was valid and NEW is not or
    NEW's runs fail their gold check; ``only`` notes a measurement on one side."""
    b_ok, n_ok = [r for r in b if r.valid], [r for r in n if r.valid]
    entry_: dict = {
        **key._asdict(),
        "n_base": len(b_ok),
        "n_new": len(n_ok),
        "speed": None,
        "speed_regression": False,
        "correctness_regression": False,
        "notes": [only] if only else [],
    }
    if b_ok and n_ok and not only:
        entry_["speed"] = {
            measure: speed_change(
                [getattr(valid_metrics(r), measure) for r in b_ok],
                [getattr(valid_metrics(r), measure) for r in n_ok],
                higher_is_better,
                threshold,
                alpha,
            )
            for measure, higher_is_better in (("ess_per_s", True), ("ms_per_gradient", False))
        }
        entry_["speed_regression"] = any(v["status"] == "regressed" for v in entry_["speed"].values())
    if b_ok and not n_ok and not only:
        gates = sorted({g for r in n for g in r.failed_gates})
        entry_["notes"].append(f"valid in BASE, no valid run in NEW (failed: {', '.join(gates)})")
        entry_["correctness_regression"] = True
    checked = [g for g in (gold_check(r) for r in n_ok) if g["status"] != "unchecked"]
    failed = any(g["status"] == "failed" for g in checked)
    entry_["gold"] = {
        "status": "failed" if failed else "passed" if checked else "unchecked",
        "runs_checked": len(checked),
        "worst": max(checked, key=lambda g: g["worst_sd"]) if checked else None,
    }
    entry_["correctness_regression"] = entry_["correctness_regression"] or failed
    return entry_


def find(base: list[RunRecord], new: list[RunRecord], threshold: float = THRESHOLD, alpha: float = ALPHA) -> dict:
    """Every measurement (``RunRecord.measurement_key``) of BASE's and NEW's clean, non-superseded runs, its speed
    change and its correctness checks. A measurement only on one side is noted as such; if the other side ran the
    same model and engine setup with other settings or data, the note says so. Records made before machines had
    fingerprints stand for their slug's machine: where either side has such records of a slug, that slug's
    records are matched by slug."""
    entries_superseded = superseded.load()
    unprinted = {r.provenance.machine.slug for r in [*base, *new] if not r.provenance.machine.fingerprint}

    def key_of(r: RunRecord) -> MeasurementKey:
        slug = r.provenance.machine.slug
        return r.measurement_key()._replace(machine=slug) if slug in unprinted else r.measurement_key()

    def grouped(recs: list[RunRecord]) -> dict[MeasurementKey, list[RunRecord]]:
        out: dict[MeasurementKey, list[RunRecord]] = {}
        for r in records.independent(recs):
            if not superseded.left_out(r, entries_superseded):
                out.setdefault(key_of(r), []).append(r)
        return out

    def loose(key: MeasurementKey) -> tuple:
        return key._replace(config_hash="", data_hash="")

    base_groups, new_groups = grouped(base), grouped(new)
    base_loose, new_loose = {loose(k) for k in base_groups}, {loose(k) for k in new_groups}
    entries = []
    for key in sorted(set(base_groups) | set(new_groups)):
        b, n = base_groups.get(key, []), new_groups.get(key, [])
        only = ""
        if not b or not n:
            differ = loose(key) in (new_loose if b else base_loose)
            only = ("only in BASE" if b else "only in NEW") + (": sampler settings or data differ" if differ else "")
        entries.append(measurement_entry(key, b, n, threshold, alpha, only))
    base_info, new_info = describe(base), describe(new)
    changes = [
        {"package": p, "base": base_info["versions"].get(p), "new": new_info["versions"].get(p)}
        for p in sorted(set(base_info["versions"]) | set(new_info["versions"]))
        if base_info["versions"].get(p) != new_info["versions"].get(p)
    ]
    speed = sum(e["speed_regression"] for e in entries)
    correctness = sum(e["correctness_regression"] for e in entries)
    return {
        "base": base_info,
        "new": new_info,
        "threshold": threshold,
        "alpha": alpha,
        "gold_sd": GOLD_SD,
        "entries": entries,
        "version_changes": changes,
        "left_out": {
            "base": left_out(records.independent(base), entries_superseded),
            "new": left_out(records.independent(new), entries_superseded),
        },
        "regressions": {"speed": speed, "correctness": correctness},
        "regressed": bool(speed or correctness),
    }
