"""Turn result records into one self-contained ``index.html``, a Markdown summary (``README.md``), and the
raw material beside them: ``runs.csv`` (one row per run), ``summary.json`` (aggregates and headline ratios) and
``records.json`` (every record as read)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, is_dataclass
from pathlib import Path

import jinja2
import pandas as pd

import models
from reports import claims, figures, headline, stats
from runner import records, references, studies, validity

LABELS = {"stan": "Stan", "numpyro": "NumPyro", "blackjax_nuts": "BlackJAX-NUTS", "blackjax_chees": "BlackJAX-ChEES"}
# Stan front ends other than the bundled driver ("httpstan"), by the engine_info's stan_interface.
STAN_FRONT_ENDS = {"cmdstanpy": "CmdStan", "pystan": "PyStan"}
PARAMETERS_SHOWN = 12  # per model, the parameters furthest from the reference first


def engine_label(record: dict) -> str:
    """E.g. "NumPyro-CPU", "NumPyro-GPU-f32" (float32 marked, float64 the unmarked default; "-tf32": float32 on
    a GPU with JAX's default matmul precision, TF32 on Ampere and later, as runs made before the runner asked for
    full float32 matmuls). "Stan-CPU" is the bundled Stan (httpstan's NUTS, one process per chain), "CmdStan-CPU"
    Stan through cmdstanpy and "PyStan-CPU" the bundled Stan driven through pystan (older records): front ends
    are never pooled."""
    info = record.get("engine_info") or {}
    name = STAN_FRONT_ENDS.get(info.get("stan_interface"), LABELS.get(record["engine"], record["engine"]))
    precision = ""
    if record["precision"] == "float32":
        full = record["device"] != "gpu" or info.get("matmul_precision") in ("highest", "float32")
        precision = "-f32" if full else "-tf32"
    return f"{name}-{record['device'].upper()}{precision}"


def data_rows(model_id: str, size: str, resize) -> int | None:
    """The N a data-size study grows (rows of logistic regression, matches of Bradley–Terry), else None."""
    spec = models.registry().get(model_id)
    if spec is None or model_id not in studies.DATA_SIZE or size not in spec.sizes:
        return None
    return spec.size_kwargs(size, resize)[studies.DATA_SIZE[model_id][1]]


def tidy(all_records: list[dict]) -> pd.DataFrame:
    """One row per record: identity, status, timings and metrics."""
    rows = []
    for r in all_records:
        metrics, timings, config = r.get("metrics") or {}, r.get("timings") or {}, r.get("config") or {}
        rows.append({
            "machine": records.machine_slug(r["provenance"]["machine"]),
            "gpus": r["provenance"]["machine"].get("gpu") or [],  # for the roofline; left out of runs.csv
            "model_id": r["model_id"], "engine": r["engine"], "device": r["device"], "precision": r["precision"],
            "chain_method": r["chain_method"], "label": engine_label(r),
            "size": r["size"], "repeat": r["repeat"], "study": r.get("study") or "",
            "chains": config.get("chains"), "draws": config.get("draws"),
            "n_rows": data_rows(r["model_id"], r["size"], config.get("resize", ())),
            "resized": ", ".join(f"{name} = {value:,}" for name, value in config.get("resize", ())),
            "config_hash": r["config_hash"], "data_hash": r.get("data_hash") or "",
            "campaign_id": r["campaign_id"], "status": r["status"],
            "valid": r["valid"], "failed_gates": ", ".join(r["failed_gates"]),
            "reference_max_z": ((r.get("gates") or {}).get("reference") or {}).get("max_z"),
            "created": r["created"],
            "stan_interface": (r.get("engine_info") or {}).get("stan_interface"),
            "compile_s": timings.get("compile_s"), "compile_cached": timings.get("compile_cached"),
            "warmup_s": timings.get("warmup_s"), "sampling_s": timings.get("sampling_s"),
            "run_s": timings.get("run_s"),
            "min_ess_bulk": metrics.get("min_ess_bulk"), "min_ess_tail": metrics.get("min_ess_tail"),
            "ess_per_s": metrics.get("ess_per_s"),
            "ms_per_gradient": metrics.get("ms_per_gradient"),
            "ess_per_1000_gradients": metrics.get("ess_per_1000_gradients"),
            "n_parameters": metrics.get("n_parameters"),
            "max_rhat": metrics.get("max_rhat"), "divergences": metrics.get("divergences"),
            "error": r.get("error", ""), "run_id": r["run_id"],
        })
    runs = pd.DataFrame(rows)
    # Cold ESS/s charges every valid repeat its group's largest compile time (the uncached build), since a
    # later repeat's compile may have come from a cache; a group compiled from a cache every time has none.
    ok = runs[runs.valid & runs.compile_s.notna()].groupby(KEYS)
    cold_compile = ok.compile_s.transform("max").where(~ok.compile_cached.transform("all").astype(bool))
    runs["ess_per_s_cold"] = runs.min_ess_bulk / (runs.run_s + cold_compile)
    return runs


KEYS = ["machine", "study", "model_id", "size", "resized", "config_hash", "data_hash", "engine", "device", "label"]


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Median over the valid repeats per (machine, model, size, config, engine label), and the invalid count."""
    ok = runs[runs.valid]
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


def parameter_rows(model_records: list[dict]) -> tuple[list[str], list[dict], str]:
    """Posterior means per engine label (median over valid runs) against the reference, in reference sd.

    Returns the labels, the rows of the parameters furthest from the reference, and where the reference came
    from (or why there is none)."""
    first = model_records[0]
    ref = references.load(first["model_id"], first["size"])
    resized = bool((first.get("config") or {}).get("resize"))
    if ref is None or resized or ref["header"]["data_hash"] != first["data_hash"]:
        return [], [], "no reference posterior for this model, size and data"
    means: dict[str, dict[str, list[float]]] = {}
    for r in model_records:
        if r["valid"] and r.get("metrics"):
            label = engine_label(r)
            for name, value in r["metrics"]["posterior_mean"].items():
                means.setdefault(name, {}).setdefault(label, []).append(value)
    labels = sorted({label for per in means.values() for label in per})
    rows = []
    for name, per_label in means.items():
        reference = ref["parameters"].get(name)
        if reference is None:
            continue
        cells = {label: float(pd.Series(values).median()) for label, values in per_label.items()}
        z = {label: (cells[label] - reference["mean"]) / reference["sd"] for label in cells}
        rows.append({"name": name, "ref_mean": reference["mean"], "ref_sd": reference["sd"], "means": cells,
                     "z": z, "worst": max(abs(v) for v in z.values())})
    rows.sort(key=lambda row: -row["worst"])
    return labels, rows, f"references/{first['model_id']}.{first['size']}.json ({ref['header']['command']})"


def model_sections(all_records: list[dict], runs: pd.DataFrame, summary: pd.DataFrame) -> list[dict]:
    """Per model: its summary rows, every run, the parameter agreement table and both programs' source."""
    sections = []
    campaign = runs[runs.study == ""]
    registry = models.registry()
    for model_id, model_runs in campaign.groupby("model_id", sort=True):
        spec = registry.get(model_id)
        by_size = []
        for size in sorted(model_runs["size"].unique()):
            group = [r for r in all_records if r["model_id"] == model_id and r["size"] == size and not r.get("study")]
            labels, rows, source = parameter_rows(group)
            by_size.append({"size": size, "labels": labels, "rows": rows[:PARAMETERS_SHOWN],
                            "more": max(len(rows) - PARAMETERS_SHOWN, 0), "source": source})
        sections.append({
            "model_id": model_id, "summary": summary[(summary.model_id == model_id) & (summary.study == "")],
            "runs": model_runs, "parameters": by_size,
            "description": spec.description if spec else "",
            "stan_source": spec.stan_file.read_text() if spec else "",
            "jax_source": spec.jax_file.read_text() if spec else "",
            "stan_file": spec.stan_file.name if spec else "", "jax_file": spec.jax_file.name if spec else "",
        })
    return sections


def study_figures(runs: pd.DataFrame, measurements: list[dict]) -> list[dict]:
    """The scaling plots for each study present in the records."""
    out = []
    sized = runs[(runs.study == "data-size") & runs.valid]
    for (machine, model_id), group in sized.groupby(["machine", "model_id"], sort=True):
        spec = models.registry().get(model_id)
        features = spec.size_kwargs(group["size"].iloc[0]).get("D") if spec else None
        gpus = group.gpus.iloc[0]
        found = claims.crossovers(runs, model_id)
        out.append({"title": f"Data size: {model_id} on {machine}",
                    "svg": figures.data_size_svg(group, features + 1 if features else None, gpus),
                    "notes": [f"{c['label']} vs Stan-CPU: {c['text']}" for c in found if c["machine"] == machine]
                    + ([] if figures.bandwidth(gpus) else ["no memory-bandwidth roofline: the device's bandwidth "
                                                            "is not known (CPU, or a GPU not in the table)"])})
    chains = runs[(runs.study == "chains") & runs.valid]
    rwmh = [m for m in measurements if m.get("measure") == "rwmh"]
    if len(chains) or rwmh:
        out.append({"title": "Chains: draws/s and ESS/s against the number of chains", "notes": [],
                    "svg": figures.chains_svg(chains, rwmh)})
    sharded = [m for m in measurements if m.get("measure") == "sharded_gradient"]
    if sharded:
        out.append({"title": "Devices: sharded log density + gradient", "svg": figures.devices_svg(sharded),
                    "notes": [f"{model_id}, ms per gradient on 1, 2, ... {sharded[0]['backend']} devices: " + ", ".join(
                        f"{m['devices']}: {m['ms_per_gradient']:.3g}" for m in sharded if m["model_id"] == model_id)
                        for model_id in sorted({m["model_id"] for m in sharded})]})
    return out


def stan_front_ends(summary: pd.DataFrame, comparisons: list[dict]) -> list[dict]:
    """Per machine and size where CmdStan ran beside the bundled Stan: the headline's CmdStan-CPU ÷ Stan-CPU
    ESS/s ratio and, per model, the bundled Stan's median ms per gradient ÷ CmdStan's."""
    out = []
    for c in comparisons:
        if (c["numerator"], c["denominator"]) != ("CmdStan-CPU", "Stan-CPU"):
            continue
        rows = summary[(summary.machine == c["machine"]) & (summary["size"] == c["size"]) & (summary.study == "")]
        per_gradient = []
        for m in c["models"]:
            same = (rows.model_id == m["model_id"]) & (rows.config_hash == m["config_hash"]) & (
                rows.data_hash == m["data_hash"])
            medians = rows[same].set_index("label").ms_per_gradient
            per_gradient.append({"model_id": m["model_id"], "ratio": medians["Stan-CPU"] / medians["CmdStan-CPU"]})
        out.append({**c, "per_gradient": per_gradient})
    return out


def provenance_rows(all_records: list[dict]) -> dict:
    """Distinct machines, versions, commits and commands across the records."""
    def distinct(values):
        return sorted({json.dumps(v, sort_keys=True) for v in values})

    prov = [r["provenance"] for r in all_records]
    stan_info = [r["engine_info"] for r in all_records if r.get("engine") == "stan" and r.get("engine_info")]
    return {
        "machines": [{**json.loads(v), "slug": records.machine_slug(json.loads(v))}
                     for v in distinct(p["machine"] for p in prov)],
        "versions": [json.loads(v) for v in distinct(p["versions"] for p in prov)],
        "commits": distinct(f"{p['git_commit']}{' (dirty)' if p['git_dirty'] else ''}" for p in prov),
        "commands": distinct(p["command"] for p in prov),
        # Records made before the runner fixed glibc's malloc thresholds ran with glibc's adaptive defaults.
        "glibc_tunables": sorted({p.get("glibc_tunables") or "not set (glibc's adaptive defaults)" for p in prov}),
        "stan": [json.loads(v) for v in distinct(stan_info)],
        "dates": (min(r["created"] for r in all_records), max(r["created"] for r in all_records)),
    }


def fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}g}"


def environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=not autoescape,
                             lstrip_blocks=not autoescape)
    env.filters["fmt"] = fmt
    env.filters["times"] = headline.times
    return env


def history_figures(history: list[dict]) -> list[dict]:
    """Per model and size: median ESS/s and ms per gradient of each engine label, campaign after campaign."""
    frame = tidy(history)
    frame = frame[frame.valid & (frame.study == "")]
    return [{"title": f"{model_id} ({size})", "svg": figures.history_svg(group)}
            for (model_id, size), group in frame.groupby(["model_id", "size"], sort=True)]


def build(results: Path, out_dir: Path, nightly: dict | None = None, history: list[dict] | None = None) -> Path:
    """Read records from ``results`` (file or folder) and write the report into ``out_dir``; ``nightly`` (a
    ``runner.compare`` result) and ``history`` (this machine's earlier records) add the nightly section."""
    all_records = records.read(results)
    measurements = records.read(results, kind="measurement")
    if not all_records:
        raise records.RecordsError(f"no records in {results}")
    runs = tidy(all_records)
    summary = summarise(runs)
    comparisons = headline.comparisons(runs)
    context = {
        "summary": summary, "runs": runs, "comparisons": comparisons,
        "claims": claims.claim_rows(runs, comparisons, measurements), "tolerance": claims.TOLERANCE,
        "provenance": provenance_rows(all_records), "stan_front_ends": stan_front_ends(summary, comparisons),
        "failed": runs[runs.status != "ok"], "gates": validity,
        "generated": records.now(), "level": round(stats.LEVEL * 100), "measurements": measurements,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    runs.drop(columns="gpus").to_csv(out_dir / "runs.csv", index=False)
    (out_dir / "records.json").write_text(json.dumps(all_records + measurements, indent=1, default=str))
    (out_dir / "summary.json").write_text(json.dumps(
        {"summary": summary.to_dict(orient="records"), "headline": comparisons}, indent=1,
        default=lambda o: asdict(o) if is_dataclass(o) else str(o)))
    (out_dir / "README.md").write_text(environment(False).get_template("summary.md").render(**context),
                                       encoding="utf-8")
    html = environment(True).get_template("report.html").render(
        **context, forests=[figures.forest_svg(c) for c in comparisons],
        chart=figures.bar_chart_svg(summary[summary.study == ""]) if (summary.study == "").any() else "",
        models=model_sections(all_records, runs, summary), studies=study_figures(runs, measurements),
        nightly=nightly, history=history_figures(history) if history else [])
    index = out_dir / "index.html"
    index.write_text(html, encoding="utf-8")
    return index
