"""What the records were made on and with (``provenance``: machines, versions, commits, commands, Stan builds), and
machines told apart: the calibration each campaign started with (a fixed Stan gradient and a fixed JAX gradient,
timed on one core: :mod:`stanjax.runner.measure.gradient_cost`), per machine label, and where two campaigns of one machine
name disagree by more than ``SPREAD``: their ratios are then two machines' ratios under one name."""

from __future__ import annotations

import json

import msgspec

from stanjax.runner.core import records
from stanjax.runner.core.engine_registry import STAN, family
from stanjax.runner.core.environment import Machine
from stanjax.runner.core.records import RunRecord

SPREAD = 0.15  # two calibrations of one side this far apart (high ÷ low - 1) are two machines


def calibrations(measurements: list[dict]) -> dict:
    """``rows``: one per campaign calibration (label, slug, campaign, when, each side's ms a gradient: its fastest try);
    ``differ``: a sentence per machine slug and side whose quiet calibrations (their load measured, not loaded:
    made from 2026-11-27 12:30 on) differ by more than ``SPREAD``; one measured beside other work, or before its
    load was recorded, is listed and compared with nothing."""
    rows = []
    for m in measurements:
        if m.get("measure") != "calibration":
            continue
        machine = msgspec.convert(m["provenance"]["machine"], Machine)
        # each side's fastest try, also where an older campaign kept the median of its runs (Stan's, to 2026-11-29)
        sides = {side["side"]: min(side.get("runs_ms") or [side["ms_per_gradient"]]) for side in m["sides"]}
        load = m.get("load")
        state = (
            "not measured"
            if not load or load.get("other_processes_share") is None
            else ("loaded" if load["loaded"] else "quiet")
        )
        rows.append(
            {
                "label": machine.label,
                "slug": machine.slug,
                "campaign_id": m["campaign_id"],
                "created": m["created"],
                "model_id": m["sides"][0]["model_id"],
                "sizes": m["sides"][0]["sizes"],
                "load": state,
                **{f"{side}_ms": sides.get(side) for side in ("stan", "jax")},
            }
        )
    rows.sort(key=lambda r: (r["slug"], r["created"]))
    differ = []
    for slug in sorted({r["slug"] for r in rows}):
        for side, name in (("stan", "Stan"), ("jax", "JAX")):
            found = sorted(
                (r[f"{side}_ms"], r["label"], r["campaign_id"])
                for r in rows
                if r["slug"] == slug and r[f"{side}_ms"] and r["load"] == "quiet"
            )
            if len(found) >= 2 and found[-1][0] > (1 + SPREAD) * found[0][0]:
                (low, low_label, low_id), (high, high_label, high_id) = found[0], found[-1]
                differ.append(
                    f"{slug}: {name}'s calibration gradient took {low:.4g} ms ({low_label}, campaign {low_id}) and "
                    f"{high:.4g} ms ({high_label}, campaign {high_id}), {high / low:.2f}×: more than "
                    f"{SPREAD:.0%} apart, so the ratios of these campaigns are of two machines under one name"
                )
    return {"rows": rows, "differ": differ}


def provenance(all_records: list[RunRecord]) -> dict:
    """Distinct machines, versions, commits and commands across the records."""

    def distinct(values):
        return sorted({json.dumps(v, sort_keys=True) for v in values})

    prov = [r.provenance for r in all_records]
    stan_info = [r.engine_info for r in all_records if family(r.engine) == STAN and r.engine_info]
    return {
        "machines": [
            {**json.loads(v), "label": msgspec.convert(json.loads(v), Machine).label}
            for v in distinct(records.to_builtins(p.machine) for p in prov)
        ],
        "versions": [json.loads(v) for v in distinct(p.versions for p in prov)],
        "commits": distinct(f"{p.git_commit}{' (dirty)' if p.git_dirty else ''}" for p in prov),
        "commands": distinct(p.command for p in prov),
        # Records made before the runner fixed glibc's malloc thresholds ran with glibc's adaptive defaults.
        "glibc_tunables": sorted({p.glibc_tunables or "not set (glibc's adaptive defaults)" for p in prov}),
        "stan": [json.loads(v) for v in distinct(stan_info)],
        "dates": (min(r.created for r in all_records), max(r.created for r in all_records)),
    }
