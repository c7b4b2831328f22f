"""Turn result records into ``index.html`` (self-contained), ``runs.csv`` and ``summary.json``."""

from __future__ import annotations

import io
import json
import math
from itertools import combinations
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from runner import records, validity

LABELS = {"stan": "Stan", "numpyro": "NumPyro", "blackjax_nuts": "BlackJAX-NUTS", "blackjax_chees": "BlackJAX-ChEES"}
CLAIM_TOLERANCE = 1.5  # a claimed ratio counts as reproduced when the measured one is within this factor

# The published claims this suite exists to test, with what a record set needs to speak to each.
CLAIMS = [
    {"source": "Maskell, StanCon 2024", "claim": "JAX-GPU ≈ 5× Stan-CPU ≈ 20× JAX-CPU (so Stan-CPU ≈ 4× JAX-CPU)",
     "pair": ("stan-cpu", "numpyro-cpu"), "claimed": 4.0},
    {"source": "Tran & Hoffman 2018 (Edward2)",
     "claim": "NUTS on GPU 100× over Stan, 37× over PyMC3 (covertype logistic regression)", "needs": "gpu"},
    {"source": "Ingram 2021", "claim": "GPU overtakes CPU above ~50k matches (hierarchical Bradley–Terry)",
     "needs": "gpu"},
    {"source": "rlouf 2020", "claim": "1e9 random-walk Metropolis samples in 25 s on CPU with vectorised chains "
     "(the PRNG key was later found never advanced)", "needs": "rwmh"},
    {"source": "TFP on JAX", "claim": "data sharded over 8 devices for logistic regression and matrix factorisation",
     "needs": "devices"},
    {"source": "Carpenter", "claim": "hierarchical IRT-2PL with ~1000 parameters", "needs": "irt"},
]
NEEDS = {"gpu": "no GPU run in these records", "rwmh": "no random-walk Metropolis study in these records",
         "devices": "no multi-device study in these records", "irt": "no IRT-2PL model in these records"}


def engine_label(engine: str, device: str, precision: str = "float64") -> str:
    """E.g. "NumPyro-CPU", "NumPyro-GPU-f32": float32 runs are marked, float64 is the unmarked default."""
    return f"{LABELS.get(engine, engine)}-{device.upper()}" + ("-f32" if precision == "float32" else "")


def tidy(all_records: list[dict]) -> pd.DataFrame:
    """One row per record: identity, status, timings and metrics."""
    rows = []
    for r in all_records:
        metrics, timings = r.get("metrics") or {}, r.get("timings") or {}
        rows.append({
            "model_id": r["model_id"], "engine": r["engine"], "device": r["device"],
            "label": engine_label(r["engine"], r["device"], r["precision"]), "size": r["size"], "repeat": r["repeat"],
            "config_hash": r["config_hash"], "campaign_id": r["campaign_id"], "status": r["status"],
            "valid": r["valid"], "failed_gates": ", ".join(r["failed_gates"]),
            "reference_max_z": ((r.get("gates") or {}).get("reference") or {}).get("max_z"),
            "created": r["created"],
            "stan_interface": (r.get("engine_info") or {}).get("stan_interface"),
            "compile_s": timings.get("compile_s"), "compile_cached": timings.get("compile_cached"),
            "warmup_s": timings.get("warmup_s"), "sampling_s": timings.get("sampling_s"),
            "run_s": timings.get("run_s"),
            "min_ess_bulk": metrics.get("min_ess_bulk"), "min_ess_tail": metrics.get("min_ess_tail"),
            "ess_per_s": metrics.get("ess_per_s"), "ess_per_s_cold": metrics.get("ess_per_s_cold"),
            "ms_per_gradient": metrics.get("ms_per_gradient"),
            "ess_per_1000_gradients": metrics.get("ess_per_1000_gradients"),
            "max_rhat": metrics.get("max_rhat"), "divergences": metrics.get("divergences"),
            "error": r.get("error", ""), "run_id": r["run_id"],
        })
    return pd.DataFrame(rows)


KEYS = ["model_id", "size", "config_hash", "engine", "device", "label"]


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Median over the valid repeats per (model, size, config, engine, device), and the count of invalid runs.

    Cold ESS/s charges every repeat the group's largest compile time (the uncached build), since a later
    repeat's compile may have come from a cache."""
    ok = runs[runs.valid].copy()
    ok["cold_compile_s"] = ok.groupby(KEYS).compile_s.transform("max")
    ok["ess_per_s_cold"] = ok.min_ess_bulk / (ok.run_s + ok.cold_compile_s)
    summary = ok.groupby(KEYS, sort=True).agg(
        repeats=("repeat", "count"), ess_per_s=("ess_per_s", "median"), ess_per_s_cold=("ess_per_s_cold", "median"),
        ms_per_gradient=("ms_per_gradient", "median"), compile_s=("compile_s", "max"),
        compile_always_cached=("compile_cached", "all"),
        run_s=("run_s", "median"), min_ess_bulk=("min_ess_bulk", "median"), max_rhat=("max_rhat", "max"),
        divergences=("divergences", "sum"),
    ).reset_index()
    invalid = runs[~runs.valid].groupby(KEYS).size().rename("invalid").reset_index()
    summary = summary.merge(invalid, on=KEYS, how="outer").sort_values(KEYS, ignore_index=True)
    summary["invalid"] = summary.invalid.fillna(0).astype(int)
    summary["repeats"] = summary.repeats.fillna(0).astype(int)
    return summary


def ratios(runs: pd.DataFrame, summary: pd.DataFrame) -> list[dict]:
    """For every pair of engines on the same model, size and config: ratio of median ESS/s, faster over slower,
    with the range of the per-repeat ratios (repeat i of a campaign against repeat i of the same campaign).
    Valid runs only."""
    ok = runs[runs.valid]
    out = []
    valid_groups = summary[summary.repeats > 0]
    for (model_id, size, config_hash), group in valid_groups.groupby(["model_id", "size", "config_hash"], sort=True):
        for (_, a), (_, b) in combinations(group.iterrows(), 2):
            if b.ess_per_s > a.ess_per_s:
                a, b = b, a
            paired = ok[(ok.model_id == model_id) & (ok.config_hash == config_hash)].pivot_table(
                index=["campaign_id", "repeat"], columns="label", values="ess_per_s")[[a.label, b.label]].dropna()
            per_repeat = (paired[a.label] / paired[b.label]).to_numpy()
            out.append({
                "model_id": model_id, "size": size, "faster": a.label, "slower": b.label,
                "ratio": a.ess_per_s / b.ess_per_s, "ratio_cold": a.ess_per_s_cold / b.ess_per_s_cold,
                "cold_unknown": [x.label for x in (a, b) if x.compile_always_cached],
                "low": float(per_repeat.min()) if len(per_repeat) else math.nan,
                "high": float(per_repeat.max()) if len(per_repeat) else math.nan,
                "repeats": int(min(a.repeats, b.repeats)), "invalid": int(a.invalid + b.invalid),
            })
    return out


RLOUF_DRAWS, RLOUF_SECONDS = 1e9, 25.0


def rwmh_claim(measurements: list[dict]) -> tuple[str, str]:
    """rlouf 2020 against the fastest JAX random-walk Metropolis measured (draws/s at its best chain count)."""
    best = {}
    for backend in ("jax", "numpy"):
        rows = [m for m in measurements if m.get("measure") == "rwmh" and m["backend"] == backend]
        if rows:
            best[backend] = max(rows, key=lambda m: m["draws_per_s"])
    if "jax" not in best:
        return NEEDS["rwmh"], "not measured here"
    jax_best = best["jax"]
    seconds = RLOUF_DRAWS / jax_best["draws_per_s"]
    measured = (f"JAX: {jax_best['draws_per_s']:.3g} draws/s at {jax_best['chains']} chains "
                f"({jax_best['provenance']['machine']['cpu']}, {jax_best['provenance']['machine']['cores']} cores), "
                f"so 1e9 draws would take {seconds:.3g} s")
    if "numpy" in best:
        measured += f"; NumPy: {best['numpy']['draws_per_s']:.3g} draws/s at {best['numpy']['chains']} chains"
    within = seconds <= RLOUF_SECONDS * CLAIM_TOLERANCE
    verdict = ("reproduced" if within else "not reproduced") + " on this machine at these chain counts (test: 1e9 " \
        f"draws within {RLOUF_SECONDS * CLAIM_TOLERANCE:g} s; every step uses a fresh PRNG key)"
    return measured, verdict


def devices_claim(measurements: list[dict]) -> tuple[str, str]:
    """TFP's sharded log density: ms per gradient on 1 device vs the most devices measured, per model."""
    rows = [m for m in measurements if m.get("measure") == "sharded_gradient"]
    if not rows:
        return NEEDS["devices"], "not measured here"
    parts = []
    for model_id in sorted({m["model_id"] for m in rows}):
        by_n = {m["devices"]: m["ms_per_gradient"] for m in rows if m["model_id"] == model_id}
        most = max(by_n)
        parts.append(f"{model_id}: {by_n[min(by_n)]:.3g} ms per gradient on {min(by_n)} device(s), "
                     f"{by_n[most]:.3g} ms on {most} ({by_n[min(by_n)] / by_n[most]:.2g}× speed-up)")
    backend = rows[0]["backend"]
    return "; ".join(parts), f"sharded log density measured on {backend} devices (equality with one device is " \
        "tested in tests/test_sharding.py)"


def claim_rows(runs: pd.DataFrame, summary: pd.DataFrame, measurements: list[dict] = ()) -> list[dict]:
    """Each seed claim with what these records measured, or why they cannot speak to it."""
    rows = []
    for claim in CLAIMS:
        row = {"source": claim["source"], "claim": claim["claim"], "measured": "", "verdict": "not measured here"}
        if claim.get("needs") == "rwmh":
            row["measured"], row["verdict"] = rwmh_claim(list(measurements))
        elif claim.get("needs") == "devices":
            row["measured"], row["verdict"] = devices_claim(list(measurements))
        elif "pair" in claim:
            first, second = claim["pair"]
            per_model = []
            for _, group in summary[summary.repeats > 0].groupby(["model_id", "size", "config_hash"]):
                by_key = {f"{g.engine}-{g.device}": g.ess_per_s for g in group.itertuples()}
                if first in by_key and second in by_key:
                    per_model.append(by_key[first] / by_key[second])
            if per_model:
                geo = float(np.exp(np.mean(np.log(per_model))))
                row["measured"] = (f"Stan-CPU ÷ NumPyro-CPU in ESS/s: claimed {claim['claimed']:g}×, measured "
                                   f"{geo:.2g}× (geometric mean over {len(per_model)} model(s), range "
                                   f"{min(per_model):.2g}–{max(per_model):.2g}×)")
                within = 1 / CLAIM_TOLERANCE <= geo / claim["claimed"] <= CLAIM_TOLERANCE
                row["verdict"] = (("reproduced" if within else "not reproduced") + " on this machine at these sizes "
                                  f"(test: measured within a factor {CLAIM_TOLERANCE:g} of the claim)")
            else:
                row["measured"] = "no valid Stan-CPU and NumPyro-CPU pair in these records"
        else:
            row["measured"] = NEEDS[claim["needs"]]
        rows.append(row)
    return rows


def bar_chart_svg(summary: pd.DataFrame) -> str:
    """ESS/s per model and engine (log scale), as inline SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pivot = summary[summary.repeats > 0].pivot_table(index="model_id", columns="label", values="ess_per_s")
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.7 * len(pivot)))
    height = 0.8 / max(len(pivot.columns), 1)
    positions = np.arange(len(pivot))
    for i, label in enumerate(pivot.columns):
        values = pivot[label].to_numpy()
        ax.barh(positions + i * height, values, height=height, label=label)
    ax.set_yticks(positions + height * (len(pivot.columns) - 1) / 2, pivot.index)
    ax.set_xscale("log")
    ax.set_xlabel("ESS/s (min bulk ESS ÷ warmup+sampling wall s; median over repeats)")
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def provenance_rows(all_records: list[dict]) -> dict:
    """Distinct machines, versions, commits and commands across the records."""
    def distinct(values):
        return sorted({json.dumps(v, sort_keys=True) for v in values})

    prov = [r["provenance"] for r in all_records]
    stan_info = [r["engine_info"] for r in all_records if r.get("engine") == "stan" and r.get("engine_info")]
    return {
        "machines": [json.loads(v) for v in distinct(p["machine"] for p in prov)],
        "versions": [json.loads(v) for v in distinct(p["versions"] for p in prov)],
        "commits": distinct(f"{p['git_commit']}{' (dirty)' if p['git_dirty'] else ''}" for p in prov),
        "commands": distinct(p["command"] for p in prov),
        "stan": [json.loads(v) for v in distinct(stan_info)],
        "dates": (min(r["created"] for r in all_records), max(r["created"] for r in all_records)),
    }


def fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}g}"


def build(results: Path, out_dir: Path) -> Path:
    """Read records from ``results`` (file or folder) and write the report into ``out_dir``."""
    all_records = records.read(results)
    measurements = records.read(results, kind="measurement")
    if not all_records:
        raise records.RecordsError(f"no records in {results}")
    runs = tidy(all_records)
    summary = summarise(runs)
    ratio_rows = ratios(runs, summary)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs.to_csv(out_dir / "runs.csv", index=False)
    (out_dir / "summary.json").write_text(json.dumps(
        {"summary": summary.to_dict(orient="records"), "ratios": ratio_rows}, indent=1, default=str))
    env = jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"),
                             autoescape=jinja2.select_autoescape(default=True), undefined=jinja2.StrictUndefined)
    env.filters["fmt"] = fmt
    html = env.get_template("report.html").render(
        summary=summary, runs=runs, ratios=ratio_rows, claims=claim_rows(runs, summary, measurements),
        chart=bar_chart_svg(summary) if len(summary) else "", provenance=provenance_rows(all_records),
        failed=runs[runs.status != "ok"], gates=validity,
        generated=records.now())
    index = out_dir / "index.html"
    index.write_text(html, encoding="utf-8")
    return index
