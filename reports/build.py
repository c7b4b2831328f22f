"""Turn result records into a report: ``index.html`` (the answer first, then the regime map, claims and pairings;
small enough to open at once), ``figures.html`` (ESS/s bars and the scaling studies), ``models/<id>.html`` (a
model's summary, agreement, every run and both sources), a Markdown summary (``README.md``), and the raw material
beside them: ``runs.csv`` (one row per run), ``summary.json`` (aggregates and headline ratios) and
``records.json.gz`` (every record as read). Every page is self-contained (inline CSS and SVG)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from dataclasses import asdict, is_dataclass
from pathlib import Path

import jinja2
import msgspec
import numpy as np
import pandas as pd

from stanjax import models
from stanjax.reports import answer, claims, figures, glossary, headline, numbers, stats
from stanjax.runner import records, references, superseded, validity
from stanjax.runner.engines import ENGINES, STAN, family
from stanjax.runner.records import RunRecord

ANSWER_FIGURE_TITLE = "JAX ÷ Stan-CPU in ESS/s per model, on a GPU and on the CPU"
PARAMETERS_SHOWN = 12  # per model, the parameters furthest from the reference first
# A record's measurement key (its group of repeats) as the columns of the runs table.
KEYS = records.MEASUREMENT_FIELDS
SCALAR_TIMINGS = [f for f in records.RunTimings.__struct_fields__ if f not in ("source", "detail")]
SCALAR_METRICS = [f for f in records.RunMetrics.__struct_fields__ if not f.startswith("posterior_")]


def tidy(all_records: list[RunRecord], entries: tuple[superseded.Entry, ...] | None = None) -> pd.DataFrame:
    """One row per record: identity, engine setup and the resources it had, sizes, status, timings and metrics,
    its block, whether an answer may use it (``entries``: results/SUPERSEDED's unless given); and what the report
    derives from them (cold ESS/s, gradients per second, the share of the run spent sampling)."""
    registry = models.registry()
    entries = superseded.load() if entries is None else entries
    rows = []
    for r in all_records:
        metrics, timings, sizes = r.metrics, r.timings, r.sizes or {}
        spec = registry.get(r.model_id)
        n_key = spec.n_key if spec else None  # which size entry is N: a fact of the model; its value: the record's
        # (a failed run may have recorded no sizes: its N is then the one it was resized to, if any)
        n_rows = sizes.get(n_key, dict(r.config.resize).get(n_key)) if n_key else None
        rows.append(
            {
                **r.measurement_key()._asdict(),
                "gpus": r.provenance.machine.gpu,  # for the roofline; left out of runs.csv
                "engine": r.engine,
                "family": family(r.engine) or "",
                "front_end": r.front_end,
                "retired": r.engine in ENGINES and r.front_end in ENGINES[r.engine].retired,
                "device": r.device,
                "precision": r.precision,
                "chain_method": r.chain_method,
                "matmul_precision": r.engine_info.get("matmul_precision"),
                "threads_per_chain": r.threads_per_chain,
                "cpu_threads": r.engine_info.get("cpu_threads"),
                "cores_usable": r.provenance.machine.cores_usable,
                "machine_cores": r.provenance.machine.cores,
                "repeat": r.repeat,
                "pairing": r.block_of[0],
                "block": r.block_of[1],
                "chains": r.config.chains,
                "warmup": r.config.warmup,
                "draws": r.config.draws,
                "n_rows": n_rows,
                "features": sizes.get("D"),
                "sizes_text": ", ".join(f"{name} = {value:,}" for name, value in sorted(sizes.items())),
                "resized": ", ".join(f"{name} = {value:,}" for name, value in r.config.resize),
                "campaign_id": r.campaign_id,
                "status": r.status,
                "loaded": bool(r.load and r.load.loaded),
                "left_out": superseded.left_out(r, entries),
                "superseded": superseded.reason(r, entries) or "",
                "other_processes_cores": r.load.other_processes_cores if r.load else None,
                "valid": r.valid,
                "failed_gates": ", ".join(r.failed_gates),
                "reference_max_z": r.gates.get("reference", {}).get("max_z"),
                "reference_max_z_sd": r.gates.get("reference", {}).get("max_z_sd"),
                "created": r.created,
                # Every scalar timing and metric the record type declares: a new one reaches runs.csv by itself.
                **{name: getattr(timings, name) if timings else None for name in SCALAR_TIMINGS},
                **{name: getattr(metrics, name) if metrics else None for name in SCALAR_METRICS},
                **energy_columns(r.energy, r.device),
                "error": r.error,
                "run_id": r.run_id,
            }
        )
    runs = pd.DataFrame(rows)
    runs["ess_per_s_cold"] = headline.cold_ess_per_s(runs)
    # ESS/s = ESS per gradient × gradients per second while sampling × share of the run spent sampling
    runs["gradients_per_s"] = 1000 / runs.ms_per_gradient
    runs["sampling_share"] = runs.sampling_s / runs.sampler_s
    runs["ess_per_joule"] = runs.min_ess_bulk / runs.joules.astype(float)
    return runs


def energy_columns(energy: records.RunEnergy | None, device: str) -> dict:
    """A run's joules summed over the sources that measured them and that it used (a GPU run: the GPUs and CPU
    packages; a CPU run: the CPU packages, not an idle GPU beside it) and their names; None where none did (or a
    counter had not ticked), so its ESS per joule is "not measured", never a cost of 0 J. Peak memory: the
    worker's host memory, and the largest of its GPUs'."""
    sources = energy.sources if energy else {}
    joules = {
        name: s.joules
        for name, s in sources.items()
        if s.joules is not None and (device == "gpu" or name.startswith("cpu"))
    }
    gpu_memory = [s.peak_memory_mib for s in sources.values() if s.peak_memory_mib is not None]
    total = sum(joules.values())
    return {
        "joules": total if total > 0 else None,
        "energy_sources": " + ".join(joules),
        "peak_host_memory_mib": energy.peak_host_memory_mib if energy else None,
        "peak_gpu_memory_mib": max(gpu_memory) if gpu_memory else None,
    }


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Median over the valid repeats per measurement (``KEYS``), and the invalid count."""
    keys = [*KEYS, "resized"]  # resized: shown beside the size (it follows from the config)
    ok = runs[runs.valid]
    summary = (
        ok.groupby(keys, sort=True)
        .agg(
            repeats=("repeat", "count"),
            ess_per_s=("ess_per_s", "median"),
            ess_per_s_cold=("ess_per_s_cold", "median"),
            ess_per_joule=("ess_per_joule", "median"),
            ms_per_gradient=("ms_per_gradient", "median"),
            compile_s=("compile_s", "max"),
            compile_always_cached=("compile_cached", "all"),
            user_s=("user_s", "median"),
            sampler_s=("sampler_s", "median"),
            min_ess_bulk=("min_ess_bulk", "median"),
            max_rhat=("max_rhat", "max"),
            divergences=("divergences", "sum"),
        )
        .reset_index()
    )
    invalid = runs[~runs.valid].groupby(keys).size().rename("invalid").reset_index()
    summary = summary.merge(invalid, on=keys, how="outer").sort_values(keys, ignore_index=True)
    summary["invalid"] = summary.invalid.fillna(0).astype(int)
    summary["repeats"] = summary.repeats.fillna(0).astype(int)
    return summary


def parameter_rows(model_records: list[RunRecord]) -> tuple[list[str], list[dict], str]:
    """Posterior means per engine label (median over valid runs) against the reference, in reference sd.

    Returns the labels, the rows of the parameters furthest from the reference, and where the reference came
    from (or why there is none)."""
    first = model_records[0]
    ref, source = references.applicable(first.model_id, first.size, first.config.resize, first.data_hash)
    if ref is None:
        return [], [], source
    means: dict[str, dict[str, list[float]]] = {}
    for r in model_records:
        if r.valid and r.metrics:
            for name, value in r.metrics.posterior_mean.items():
                means.setdefault(name, {}).setdefault(r.label, []).append(value)
    labels = sorted({label for per in means.values() for label in per})
    rows = []
    for name, per_label in means.items():
        reference = ref["parameters"].get(name)
        if reference is None:
            continue
        cells = {label: float(pd.Series(values).median()) for label, values in per_label.items()}
        z = {label: (cells[label] - reference["mean"]) / reference["sd"] for label in cells}
        rows.append(
            {
                "name": name,
                "ref_mean": reference["mean"],
                "ref_sd": reference["sd"],
                "means": cells,
                "z": z,
                "worst": max(abs(v) for v in z.values()),
            }
        )
    rows.sort(key=lambda row: -row["worst"])
    return labels, rows, source


def model_sections(all_records: list[dict], runs: pd.DataFrame, summary: pd.DataFrame) -> list[dict]:
    """Per model (every registered one, and any other the records hold): its summary rows, every run, the
    parameter agreement table and both programs' source."""
    sections = []
    campaign = runs[runs.study == ""]
    registry = models.registry()
    for model_id in sorted(set(registry) | set(campaign.model_id)):  # a page for every model the index names
        model_runs, spec = campaign[campaign.model_id == model_id], registry.get(model_id)
        by_size = []
        for size in sorted(model_runs["size"].unique()):
            group = [r for r in all_records if r.model_id == model_id and r.size == size and not r.study]
            labels, rows, source = parameter_rows(group)
            by_size.append(
                {
                    "size": size,
                    "labels": labels,
                    "rows": rows[:PARAMETERS_SHOWN],
                    "more": max(len(rows) - PARAMETERS_SHOWN, 0),
                    "source": source,
                }
            )
        sections.append(
            {
                "model_id": model_id,
                "title": answer.title_of(model_id),
                "regime_name": answer.regime_name(spec.regime) if spec and spec.regime else "",
                "summary": summary[(summary.model_id == model_id) & (summary.study == "")],
                "runs": model_runs,
                "parameters": by_size,
                "description": spec.description if spec else "",
                "regime": spec.regime if spec else "",
                "stan_source": spec.stan_file.read_text() if spec else "",
                "jax_source": spec.jax_file.read_text() if spec else "",
                "stan_file": spec.stan_file.name if spec else "",
                "jax_file": spec.jax_file.name if spec else "",
            }
        )
    return sections


def study_figures(runs: pd.DataFrame, measurements: list[dict], colours: dict) -> list[dict]:
    """The scaling plots for each study present in the records, every run drawn (invalid and failed ones
    marked)."""
    out = []
    usable = runs[headline.answerable(runs)]  # the crossovers the claims read, from the runs an answer may use
    sized = runs[runs.study == "data-size"]
    for (machine, model_id), group in sized.groupby(["machine", "model_id"], sort=True):
        features = group.features.dropna()
        gpus = group.gpus.iloc[0]
        found = [c for c in claims.crossovers(usable, model_id) if c["machine"] == machine]
        title = f"Data size: {model_id} on {machine}, {figures.samplers(group.engine.unique())}"
        out.append(
            {
                "title": title,
                "svg": figures.data_size_svg(
                    group, int(features.iloc[0]) + 1 if len(features) else None, gpus, found, colours, title
                ),
                "notes": [f"{c['label']} vs {c['stan_label']}: {c['text']}" for c in found]
                + (
                    []
                    if figures.bandwidth(gpus)
                    else [
                        "no memory-bandwidth roofline: the device's bandwidth "
                        "is not known (CPU, or a GPU not in the table)"
                    ]
                ),
            }
        )
    chains = runs[runs.study == "chains"]
    for (model_id, size), group in chains.groupby(["model_id", "size"], sort=True):
        title = (
            f"Chains: {model_id} ({size}), {figures.samplers(group.engine.unique())}: draws/s and ESS/s "
            "against the number of chains"
        )
        out.append({"title": title, "notes": [], "svg": figures.chains_svg(group, colours, title)})
    rwmh = [m for m in measurements if m.get("measure") == "rwmh"]
    if rwmh:
        out.append(
            {
                "title": "Chains: random-walk Metropolis on rlouf's 1-D Gaussian mixture, JAX vs NumPy",
                "notes": [],
                "svg": figures.rwmh_svg(rwmh, colours),
            }
        )
    sharded = [m for m in measurements if m.get("measure") == "sharded_gradient"]
    if sharded:
        out.append(
            {
                "title": "Devices: sharded log density + gradient",
                "svg": figures.devices_svg(sharded),
                "notes": [
                    f"{model_id}, ms per gradient on 1, 2, ... {sharded[0]['backend']} devices: "
                    + ", ".join(
                        f"{m['devices']}: {numbers.number(m['ms_per_gradient'])}"
                        for m in sharded
                        if m["model_id"] == model_id
                    )
                    for model_id in sorted({m["model_id"] for m in sharded})
                ],
            }
        )
    return out


def stan_front_ends(runs: pd.DataFrame, comparisons: list[dict]) -> list[dict]:
    """Per machine and size where CmdStan ran beside the bundled Stan: the headline's CmdStan ÷ bundled Stan ESS/s
    ratio and, per model, the median over its blocks of the bundled Stan's ms per gradient ÷ CmdStan's."""
    ms_per_gradient = dict(zip(runs.run_id, runs.ms_per_gradient))
    out = []
    for c in comparisons:
        if (
            (c["numerator_setup"]["front_end"], c["denominator_setup"]["front_end"]) != ("cmdstan", "bundled")
            or c["numerator_setup"]["engine"] != "stan"
            or c["denominator_setup"]["engine"] != "stan"
        ):
            continue
        per_gradient = [
            {
                "model_id": m["model_id"],
                "ratio": float(
                    np.median([ms_per_gradient[den] / ms_per_gradient[num] for num, den in zip(*m["run_ids"])])
                ),
            }
            for m in c["models"]
        ]
        out.append({**c, "per_gradient": per_gradient})
    return out


def exclusions(runs: pd.DataFrame, entries: tuple[superseded.Entry, ...], all_records: list[RunRecord]) -> dict:
    """What the answer leaves out, counted: the runs no ratio or claim uses, per reason (each run under the first
    reason that applies: its load, then results/SUPERSEDED), the runs of a study (in no headline ratio or regime
    map), and every SUPERSEDED entry with the runs it covers."""
    reasons = runs[~headline.answerable(runs)].left_out.value_counts()
    return {
        "runs": len(runs),
        "left_out": int(reasons.sum()),
        "reasons": {reason: int(reasons[reason]) for reason in headline.LEFT_OUT if reason in reasons},
        "text": headline.left_out_text(runs),
        "study_runs": int((runs.study != "").sum()),
        "superseded_entries": [
            {
                "why": e.why,
                "fixed_by": e.fixed_by,
                "selector": e.selector,
                "runs": sum(e.covers(r) for r in all_records),
            }
            for e in entries
        ],
    }


def provenance_rows(all_records: list[RunRecord]) -> dict:
    """Distinct machines, versions, commits and commands across the records."""

    def distinct(values):
        return sorted({json.dumps(v, sort_keys=True) for v in values})

    prov = [r.provenance for r in all_records]
    stan_info = [r.engine_info for r in all_records if family(r.engine) == STAN and r.engine_info]
    return {
        "machines": [
            {**json.loads(v), "slug": msgspec.convert(json.loads(v), records.Machine).slug}
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


def model_page(model_id: str) -> str:
    """A model's page, relative to the index: ``models/<id>.html`` for an id fit for a file name, else named by
    its hash (an id from a record never becomes a path)."""
    if re.fullmatch(r"[A-Za-z0-9][\w.-]{0,99}", model_id):
        return f"models/{model_id}.html"
    return f"models/model-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}.html"


def markdown_cell(value):
    """A value as it may stand in a Markdown table: no cell break, no line break (HTML is escaped as well)."""
    return value.replace("|", "\\|").replace("\r", " ").replace("\n", " ") if isinstance(value, str) else value


def environment(markdown: bool) -> jinja2.Environment:
    """Templates escape every value from a record, in HTML and in the Markdown summary alike (GitHub renders both:
    a record's ``<script>`` must stay text)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("stanjax.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=markdown,
        lstrip_blocks=markdown,
        finalize=markdown_cell if markdown else None,
    )
    env.filters["fmt"] = numbers.number
    env.filters["count"] = numbers.count
    env.filters["measured"] = numbers.measured
    env.filters["times"] = numbers.times
    env.filters["speed"] = numbers.speed
    env.filters["span"] = numbers.span
    env.filters["page"] = model_page
    env.filters["model_title"] = answer.title_of
    return env


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells that a spreadsheet would run as a formula (a leading =, +, -, @) get a leading apostrophe."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(
                lambda v: f"'{v}" if isinstance(v, str) and v.startswith(FORMULA_START) else v
            )
    return safe


def history_figures(history: list[RunRecord], colours: dict) -> list[dict]:
    """Per model and size: median ESS/s and ms per gradient of each engine label, campaign after campaign."""
    frame = tidy(history)
    frame = frame[frame.valid & (frame.study == "")]
    return [
        {
            "title": f"{model_id} ({size})",
            "svg": figures.history_svg(
                group, colours, f"History: {model_id} ({size}), {figures.samplers(group.engine.unique())}"
            ),
        }
        for (model_id, size), group in frame.groupby(["model_id", "size"], sort=True)
    ]


def build(
    results: Path | list[Path],
    out_dir: Path,
    nightly: dict | None = None,
    history: list[RunRecord] | None = None,
    records_in_place: bool = False,
) -> Path:
    """Read records from ``results`` (files or folders) and write the report into ``out_dir``; ``nightly`` (a
    ``runner.compare`` result) and ``history`` (this machine's earlier records) add the nightly section. With
    ``records_in_place`` (one results folder, the report committed beside it) the page links to that folder
    instead of copying every record into ``records.json.gz``: the records are kept once."""
    as_read = records.read(results)
    all_records = records.independent(as_read)
    measurements = records.read_measurements(results)
    if not all_records:
        raise records.RecordsError(f"no records in {results}")
    entries = superseded.load()
    runs = tidy(all_records, entries)
    campaign = runs[runs.study == ""]
    answerable = runs[headline.answerable(runs)]
    summary = summarise(runs)
    comparisons = headline.comparisons(runs)
    regime_maps = answer.maps(campaign, comparisons)
    overview = answer.overview(campaign, regime_maps)
    claim_rows = claims.claim_rows(answerable, comparisons, regime_maps, measurements)
    provenance = provenance_rows(all_records)
    rwmh = [m for m in measurements if m.get("measure") == "rwmh"]
    colours = figures.palette([*runs.label, *(figures.rwmh_label(m) for m in rwmh), *(r.label for r in history or [])])
    stan_side = [c for c in comparisons if headline.is_stan_side(c)]
    left_out = exclusions(runs, entries, all_records)
    context = {
        "summary": summary,
        "runs": runs,
        "comparisons": [c for c in comparisons if not headline.is_stan_side(c)],
        "stan_side": stan_side,
        "claims": claim_rows,
        "tolerance": claims.TOLERANCE,
        "maps": regime_maps,
        "overview": overview,
        "why": answer.why(campaign, regime_maps),
        "factors": answer.FACTORS,
        "resources": answer.resources(campaign),
        "resource_columns": answer.RESOURCE_COLUMNS,
        "glossary": glossary.TERMS,
        "provenance": provenance,
        "stan_front_ends": stan_front_ends(runs, comparisons),
        "failed": runs[runs.status != "ok"],
        "gates": validity,
        "left_out": left_out,
        "min_blocks": stats.MIN_BLOCKS,
        "generated": records.now(),
        "level": round(stats.LEVEL * 100),
        "measurements": measurements,
        "same_seed": len(as_read) - len(all_records),
        "records_link": os.path.relpath(Path(results), out_dir) + "/" if records_in_place else None,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_safe(runs.drop(columns="gpus")).to_csv(out_dir / "runs.csv", index=False)
    if not records_in_place:  # every record as read, gzipped (mtime 0: the same records give the same bytes)
        (out_dir / "records.json.gz").write_bytes(
            gzip.compress(
                json.dumps([records.to_builtins(r) for r in as_read] + measurements, indent=1, default=str).encode(),
                mtime=0,
            )
        )
    (out_dir / "summary.json").write_text(
        json.dumps(
            {
                "summary": summary.to_dict(orient="records"),
                "left_out": left_out,
                "headline": comparisons,
                "claims": claim_rows,
                "answer": {o["pairing"].key: o["sentence"] for o in overview},
                "regime_maps": [serialisable_map(m) for m in regime_maps],
            },
            indent=1,
            default=lambda o: asdict(o) if is_dataclass(o) else str(o),
        )
    )
    (out_dir / "README.md").write_text(
        environment(markdown=True).get_template("summary.md").render(**context), encoding="utf-8"
    )
    html = environment(markdown=False)
    sections = model_sections(all_records, runs, summary)
    studies = study_figures(runs, measurements, colours)
    index = out_dir / "index.html"
    index.write_text(
        html.get_template("report.html").render(
            **{
                **context,
                "comparisons": [{**c, "forest": figures.forest_svg(c)} for c in context["comparisons"]],
                "stan_side": [{**c, "forest": figures.forest_svg(c)} for c in stan_side],
            },
            answer_figure=figures.answer_svg(overview, stats.MIN_BLOCKS, ANSWER_FIGURE_TITLE),
            models=sections,
            has_studies=bool(studies),
            nightly=nightly,
            history=history_figures(history, colours) if history else [],
        ),
        encoding="utf-8",
    )
    bars = figures.ess_bars(runs)
    (out_dir / "figures.html").write_text(
        html.get_template("figures.html").render(
            bars=[
                {"machine": machine, "size": size, "svg": figures.bar_chart_svg(panel, colours, machine, size)}
                for (machine, size), panel in bars.groupby(["machine", "size"], sort=True)
            ],
            studies=studies,
        ),
        encoding="utf-8",
    )
    (out_dir / "models").mkdir(exist_ok=True)
    for section in sections:
        (out_dir / model_page(section["model_id"])).write_text(
            html.get_template("model.html").render(m=section), encoding="utf-8"
        )
    return index


def serialisable_map(regime_map: dict) -> dict:
    """A regime map for summary.json: the pairing by name, each cell without the comparison entry it points to
    (that is in "headline")."""
    return {
        "pairing": regime_map["pairing"].title,
        "columns": regime_map["columns"],
        "groups": [
            {
                **g,
                "rows": [
                    {
                        "model_id": row["model_id"],
                        "cells": [{k: v for k, v in c.items() if k != "entry"} for c in row["cells"]],
                    }
                    for row in g["rows"]
                ],
            }
            for g in regime_map["groups"]
        ],
    }
