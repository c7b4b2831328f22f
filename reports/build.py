"""Turn result records into a report: ``index.html`` (the answer first, then the table per model, the claims),
``regimes.html`` (the regime map), ``why.html`` (each ratio's factors, what each engine label had),
``provenance.html`` (what no answer uses, failed runs, machines, calibrations, versions, commands, what was
superseded), ``glossary.html``,
``pairings.html``, ``pairings-nutpie.html`` and ``pairings-stan-side.html`` (each list's pairings: "All pairings",
"nutpie", "Stan side"), ``forests.html``, ``forests-nutpie.html`` and ``forests-stan-side.html`` (each pairing's
ratio per model), ``figures.html`` (each model's ratios, ESS/s bars),
``accuracy.html`` (approximations' medians and accuracy against time), ``studies.html`` (scaling studies,
composed ESS/s), ``models/<id>.html`` (a model's runs, agreement and sources), ``README.md`` (a summary),
``runs.csv.gz``, ``summary.json`` and ``records.json.gz`` (every record as read). Every page is self-contained
(inline CSS and SVG) and, as the committed records stand, under 400 KB, the index under 250 KB and ten screens: each opens at once."""

from __future__ import annotations

import functools
import gzip
import json
import os
import warnings
from dataclasses import asdict, is_dataclass
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd

from stanjax.reports import (
    answer,
    approximations,
    claim_verdicts,
    claims,
    composed,
    crossover,
    decomposition,
    figures,
    first_screen,
    glossary,
    headline,
    machines,
    model_table,
    numbers,
    pairing_pages,
    regimes,
    roofline,
    stats,
)
from stanjax.reports.model_pages import model_page, model_sections
from stanjax.reports.runs_table import failed_groups, summarise, tidy
from stanjax.reports.study_figures import rwmh_label, study_figures
from stanjax.runner.core import records, superseded
from stanjax.runner.core.engine_registry import STAN
from stanjax.runner.core.records import RunRecord
from stanjax.runner.measure import validity

ANSWER_FIGURE_TITLE = "JAX ÷ Stan-CPU in ESS/s per model, on a GPU and on the CPU"
CROSSOVER_TITLE = "When is JAX on a CPU faster than Stan? Each model's ratio against the work of one gradient"


def stan_front_ends(runs: pd.DataFrame, comparisons: list[dict]) -> list[dict]:
    """Per machine and size where CmdStan ran beside the bundled Stan: the headline's CmdStan ÷ bundled Stan ESS/s
    ratio and, per model, the median over its blocks of the bundled Stan's ms per gradient ÷ CmdStan's."""
    ms_per_gradient = dict(zip(runs.run_id, runs.ms_per_gradient))
    out = []
    for c in comparisons:
        a, b = c["numerator_setup"], c["denominator_setup"]
        if (a["engine"], a["front_end"], b["engine"]) != ("stan", "cmdstan", "stan") or (
            b["front_end"] not in headline.BUNDLED_STAN
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


def markdown_cell(value):
    """A value as it may stand in a Markdown table: no cell break, no line break (HTML is escaped as well)."""
    return value.replace("|", "\\|").replace("\r", " ").replace("\n", " ") if isinstance(value, str) else value


@functools.cache
def environment(markdown: bool) -> jinja2.Environment:
    """Templates escape every value from a record, in HTML and in the Markdown summary alike (GitHub renders both:
    a record's ``<script>`` must stay text). One a process: it keeps its compiled templates (0.7 s a build)."""
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
    ``runner.campaigns.regressions`` result) and ``history`` (this machine's earlier records) add the nightly section. With
    ``records_in_place`` (one results folder, the report committed beside it) the page links to that folder
    instead of copying every record into ``records.json.gz``: the records are kept once. The page's index."""
    as_read, measurements, skipped = records.read_all(results)  # each file once: its damage said once
    for damaged in skipped:
        warnings.warn(damaged, stacklevel=2)
    records_link = None
    if records_in_place:
        assert not isinstance(results, list), "records_in_place links to one results folder (the report command checks)"
        records_link = os.path.relpath(Path(results), out_dir) + "/"
    context = report_context(as_read, measurements, records_link, source=str(results))
    context["skipped"] = skipped  # what the page says the reading left out
    out_dir.mkdir(parents=True, exist_ok=True)
    write_data(out_dir, context, None if records_in_place else as_read)
    return write_pages(out_dir, context, nightly, history)


def report_context(
    as_read: list[RunRecord], measurements: list[dict], records_link: str | None, source: str = "the results"
) -> dict:
    """Everything the pages and data files show, computed from the records as read (``source`` names where, for
    the error when there are none): the templates' context, and the frames the writers read beside it."""
    all_records = records.independent(as_read)
    if not all_records:
        raise records.RecordsError(f"no records in {source}")
    entries = superseded.load()
    runs = tidy(all_records, entries)
    samplers = runs[~runs.approximate]  # ESS pairings, claims and regimes compare samplers only
    campaign = samplers[samplers.study == ""]
    answerable = samplers[headline.answerable(samplers)]
    summary = summarise(samplers)
    comparisons = headline.comparisons(samplers)
    regime_maps = regimes.maps(campaign, comparisons)
    points = approximations.accuracy_points(runs, all_records)
    composed_rows = composed.rows(samplers, measurements)
    return {
        "all_records": all_records,
        "samplers": samplers,
        "campaign": campaign,
        "points": points,
        "all_comparisons": comparisons,
        "composed": composed_rows,
        "composed_ratios": composed.ratios(composed_rows),
        "summary": summary,
        "runs": runs,
        "comparisons": [c for c in comparisons if not headline.is_stan_side(c) and not headline.is_nutpie(c)],
        "nutpie": [c for c in comparisons if headline.is_nutpie(c)],
        "stan_side": [c for c in comparisons if headline.is_stan_side(c) and not headline.is_nutpie(c)],
        "claims": claims.claim_rows(answerable, comparisons, regime_maps, measurements, points),
        "tolerance": claim_verdicts.TOLERANCE,
        "maps": regime_maps,
        "overview": (overview := answer.overview(campaign, regime_maps, answer.front_end_gaps(comparisons))),
        "crossover": (crossing := crossover.points(answer.cpu_answer(overview)["rows"], campaign)),
        "regime_summary": (regime_summary := first_screen.regime_summary(overview, [p["regime"] for p in crossing])),
        "summary_widths": first_screen.column_widths(regime_summary),
        "why": answer.why(campaign, regime_maps),
        "decomposition": (decomposed := decomposition.rows(comparisons)),
        "parts": decomposition.PARTS,
        "stan_user": decomposition.stan_user_line(decomposed),
        "factors": answer.FACTORS,
        "resources": answer.resources(campaign),
        "resource_columns": answer.RESOURCE_COLUMNS,
        "glossary": glossary.TERMS,
        "provenance": {**machines.provenance(all_records), "calibrations": machines.calibrations(measurements)},
        "stan_front_ends": stan_front_ends(runs, comparisons),
        "failed": failed_groups(runs[runs.status != "ok"]),
        "gates": validity,
        "left_out": exclusions(runs, entries, all_records),
        "min_blocks": stats.MIN_BLOCKS,
        "generated": records.now(),
        "level": round(stats.LEVEL * 100),
        "measurements": measurements,
        "same_seed": len(as_read) - len(all_records),
        "records_link": records_link,
    }


def write_data(out_dir: Path, context: dict, as_read: list[RunRecord] | None) -> None:
    """runs.csv.gz, summary.json, README.md and, with ``as_read`` (records not linked in place), every record as
    read in records.json.gz."""
    gzipped = {"method": "gzip", "compresslevel": 9, "mtime": 0}  # 1.5 MB -> 0.4 committed; the same bytes again
    csv_safe(context["runs"].drop(columns="gpus")).to_csv(out_dir / "runs.csv.gz", index=False, compression=gzipped)
    if as_read is not None:  # every record as read, gzipped (mtime 0: the same records give the same bytes)
        (out_dir / "records.json.gz").write_bytes(
            gzip.compress(
                json.dumps(
                    [records.to_builtins(r) for r in as_read] + context["measurements"], indent=1, default=str
                ).encode(),
                mtime=0,
            )
        )
    (out_dir / "summary.json").write_text(
        json.dumps(
            {
                "summary": context["summary"].to_dict(orient="records"),
                "left_out": context["left_out"],
                "headline": context["all_comparisons"],
                "claims": context["claims"],
                "answer": {o["pairing"].key: o["sentence"] for o in context["overview"]},
                "first_screen": {o["pairing"].key: o["short"] or o["sentence"] for o in context["overview"]},
                "crossover": context["crossover"],
                "regime_maps": [serialisable_map(m) for m in context["maps"]],
                "composed": context["composed_ratios"],
            },
            indent=1,
            default=lambda o: asdict(o) if is_dataclass(o) and not isinstance(o, type) else str(o),
        )
    )
    (out_dir / "README.md").write_text(
        environment(markdown=True).get_template("summary.md").render(**context), encoding="utf-8"
    )


def write_pages(out_dir: Path, context: dict, nightly: dict | None, history: list[RunRecord] | None) -> Path:
    """The pages (the module's docstring names them) and a page per model; the index's path."""
    runs, samplers, points = context["runs"], context["samplers"], context["points"]
    rwmh = [m for m in context["measurements"] if m.get("measure") == "rwmh"]
    colours = figures.palette([*runs.label, *(rwmh_label(m) for m in rwmh), *(r.label for r in history or [])])
    html = environment(markdown=False)
    sections = model_sections(context["all_records"], samplers, context["summary"])
    studies = study_figures(samplers, context["measurements"], colours)
    studies += [f for f in [roofline.figure(context["measurements"])] if f]
    accuracy_figures = approximations.figures(points, colours)
    pairings = pairing_pages.listed(context)
    pages: dict[str, dict] = {
        "index.html": dict(
            crossover_figure=crossover.crossover_svg(context["crossover"], "JAX-CPU", "Stan-CPU", CROSSOVER_TITLE),
            cpu_key=answer.CPU_KEY,
            cpu_name=(cpu := answer.cpu_answer(context["overview"]))["pairing"].title,
            model_columns=model_table.COLUMNS,
            model_table=model_table.rows(cpu["rows"], context["campaign"], [p["regime"] for p in context["crossover"]]),
            unlisted=[m for m in sections if m["model_id"] not in {r["model_id"] for r in cpu["rows"]}],
            has_studies=bool(studies),
            nightly=nightly,
            history=history_figures(history, colours) if history else [],
        ),
        "figures.html": dict(
            answer_figure=figures.answer_svg(context["overview"], stats.MIN_BLOCKS, ANSWER_FIGURE_TITLE),
            bars=[
                {"machine": machine, "size": size, "svg": figures.bar_chart_svg(panel, colours, machine, size)}
                for (machine, size), panel in figures.ess_bars(samplers).groupby(["machine", "size"], sort=True)
            ],
        ),
        "accuracy.html": dict(
            approximations=accuracy_figures,
            khat_fitted=validity.KHAT_FITTED,
            stan_approximations=bool((points.approximate & (points.family == STAN)).any()),
        ),
        "studies.html": dict(studies=studies, composed=context["composed"]),
    }
    pages["regimes.html"] = pages["why.html"] = pages["provenance.html"] = pages["glossary.html"] = {}
    pages |= pairing_pages.pages(context)
    for name, extra in pages.items():
        template = extra.pop("template", "report.html" if name == "index.html" else name)
        (out_dir / name).write_text(
            html.get_template(template).render(**{**context, **pairings, **extra}), encoding="utf-8"
        )
    (out_dir / "models").mkdir(exist_ok=True)
    for section in sections:
        (out_dir / model_page(section["model_id"])).write_text(
            html.get_template("model.html").render(m=section), encoding="utf-8"
        )
    return out_dir / "index.html"


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
