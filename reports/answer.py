"""The answer first: for each pairing the report answers (``headline.PAIRINGS``), the first screen (``overview``):
the sentence that answers and, per model, every ratio of its regime map (``reports.regimes``) with its qualifiers;
where each ratio comes from (ESS per gradient, gradients per second, the share of the run spent sampling); and the
resources each engine setup had.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stanjax import models
from stanjax.reports.headline import Pairing, answerable, left_out_text
from stanjax.reports.numbers import count, interval, number, speed, times
from stanjax.reports.regimes import FASTER, INVALID, MEASURED, SLOWER, UNCLEAR, setups, size_order
from stanjax.reports.stats import MIN_BLOCKS
from stanjax.runner.core.config import is_expert, stanc_options
from stanjax.runner.core.engine_registry import STAN

SENTENCE_DETAIL = 3  # a direction with more models than this is summarised: the first screen stays one screen


def factors(runs: pd.DataFrame) -> dict:
    """Medians over valid runs of ESS/s and its three factors: ESS per 1,000 gradients (the sampler), gradients
    per second while sampling (a gradient's cost), the share of the run spent sampling (warmup's cost); and the
    two clocks. ESS/s = ESS per gradient × gradients per second × sampling share, run by run."""
    ok = runs[runs.valid]
    return {
        "ess_per_s": ok.ess_per_s.median(),
        "ess_per_1000_gradients": ok.ess_per_1000_gradients.median(),
        "gradients_per_s": ok.gradients_per_s.median(),
        "sampling_share": ok.sampling_share.median(),
        "user_s": ok.user_s.median(),
        "sampler_s": ok.sampler_s.median(),
        "overhead": ((ok.user_s - ok.sampler_s) / ok.user_s).median(),
    }


FACTORS = (
    ("ess_per_1000_gradients", "sampler (ESS per gradient)"),
    ("gradients_per_s", "gradient cost (gradients per second)"),
    ("sampling_share", "warmup (sampling share)"),
)


def why(campaign: pd.DataFrame, regime_maps: list[dict]) -> list[dict]:
    """For every cell with a ratio: each side's factors over the runs of its ratio's blocks and the ratio of each
    factor, and which factor moves the ratio most."""
    out = []
    for m in regime_maps:
        rows = []
        for g in m["groups"]:
            for row in g["rows"]:
                for c in row["cells"]:
                    if "ratio" not in c:
                        continue
                    same = campaign[campaign.run_id.isin([*c["entry"]["run_ids"][0], *c["entry"]["run_ids"][1]])]
                    a = factors(same[same.label == c["numerator"]])
                    b = factors(same[same.label == c["denominator"]])
                    ratios = {name: a[name] / b[name] for name, _ in FACTORS}
                    largest = max(FACTORS, key=lambda f: abs(np.log(ratios[f[0]])))[1]
                    rows.append(
                        {
                            "model_id": row["model_id"],
                            "cell": c,
                            "numerator": a,
                            "denominator": b,
                            "ratios": ratios,
                            "largest": largest,
                        }
                    )
        out.append({"pairing": m["pairing"], "rows": rows})
    return out


RESOURCE_COLUMNS = (
    ("device", "device"),
    ("front_end", "front end"),
    ("precision_shown", "precision"),
    ("chains", "chains"),
    ("chain_method", "chain method"),
    ("cores_shown", "cores"),
    ("threads_per_chain", "Stan threads per chain"),
    ("cpu_threads", "XLA CPU threads"),
    ("iterations", "warmup + draws"),
)


def cores_text(pinned, usable, machine) -> str:
    """The cores a run had: those the runner pinned it to; for records made before it pinned, the cores its
    process could use (a taskset around the campaign), else the machine's."""
    if pinned:
        return f"{int(pinned)}, pinned"
    if usable == usable and usable and usable != machine:
        return f"{int(usable)} of {count(machine)} (taskset around the campaign)"
    return f"all {count(machine)} (not pinned)"


def resources(runs: pd.DataFrame) -> list[dict]:
    """Per machine and engine label, what its runs had (every distinct value where runs differ): the fairness
    table."""
    frame = runs.assign(
        # a record without matmul_precision (NaN in the frame) on a GPU ran JAX's default, TF32
        precision_shown=[
            precision
            + (
                f" (matmuls: {matmul})"
                if isinstance(matmul, str) and matmul
                else " (matmuls: JAX's default, TF32)"
                if device == "gpu" and precision == "float32"
                else ""
            )
            for precision, matmul, device in zip(runs.precision, runs.matmul_precision, runs.device)
        ],
        cores_shown=[cores_text(*row) for row in zip(runs.cores, runs.cores_usable, runs.machine_cores)],
        threads_per_chain=runs.threads_per_chain.where(runs.family == STAN),
        iterations=[f"{w:,} + {d:,}" for w, d in zip(runs.warmup, runs.draws)],
    )
    out = []
    for (machine, label), group in frame.groupby(["machine", "label"], sort=True):
        values = {}
        for column, _ in RESOURCE_COLUMNS:
            distinct = sorted(
                {v if isinstance(v, str) else count(v) for v in group[column] if v is not None and v == v and v != ""}
            )
            values[column] = ", ".join(distinct) or "–"
        out.append({"machine": machine, "label": label, "runs": len(group), **values})
    return out


def title_of(model_id: str) -> str:
    """A model's short title for prose and figures (its spec's), else its id."""
    spec = models.registry().get(model_id)
    return spec.title if spec and spec.title else model_id


def side_text(runs: pd.DataFrame) -> str:
    """What one side of a ratio had, read from its runs: "NumPyro-GPU-tf32: float32 with TF32 matrix products,
    4 chains vectorized, on the GPU", "Stan-CPU: float64, 4 chains parallel, cores: 2, pinned"."""
    r = runs.iloc[0]
    precision = r.precision
    if r.device == "gpu" and r.precision == "float32":
        full = r.matmul_precision in ("highest", "float32")  # as engines.label reads it
        precision += " with full float32 matrix products" if full else " with TF32 matrix products (JAX's default)"
    threads = f", {count(r.threads_per_chain)} threads a chain" if r.family == STAN and r.threads_per_chain > 1 else ""
    threads += ", the expert's program (stan/expert/)" if is_expert(r.program) else ""
    threads += f", translated with stanc {' '.join(stanc_options(r.program))}" if stanc_options(r.program) else ""
    where = "on the GPU" if r.device == "gpu" else f"cores: {cores_text(r.cores, r.cores_usable, r.machine_cores)}"
    return f"{r.label}: {precision}, {count(r.chains)} chains {r.chain_method}{threads}, {where}"


def qualifiers(campaign: pd.DataFrame, c: dict) -> str:
    """Everything a ratio cell's number rests on, in one line: machine, size, blocks, and what each side had."""
    runs = campaign[campaign.run_id.isin([*c["entry"]["run_ids"][0], *c["entry"]["run_ids"][1]])]
    sides = "; ".join(side_text(runs[runs.label == label]) for label in (c["numerator"], c["denominator"]))
    blocks = c["ratio"].blocks
    return (
        f"{c['machine']}, {c['size']} size, {count(blocks)} paired block{'s' if blocks != 1 else ''}"
        f"{'' if blocks >= MIN_BLOCKS else f' ({MIN_BLOCKS} needed)'}. {sides}"
    )


def to_result(campaign: pd.DataFrame, c: dict) -> dict:
    """The other question beside a ratio cell's ESS/s: each side's median time to 1,000 effective draws in a fresh
    process (compilation from the cache its runs found; cold: as first compiled) over the cell's runs, the
    numerator's speed-up on it (> 1: sooner), and whether it points the other way from the ESS/s ratio."""
    sides = [campaign[campaign.run_id.isin(ids) & campaign.valid] for ids in c["entry"]["run_ids"]]
    warm = [float(side.time_to_result_s.median()) for side in sides]
    cold = [float(side.time_to_result_cold_s.median()) for side in sides]
    ratio = warm[1] / warm[0] if all(np.isfinite(warm)) and warm[0] > 0 else None
    cold_ratio = cold[1] / cold[0] if all(np.isfinite(cold)) and cold[0] > 0 else None
    disagree = [
        name
        for name, r in (("cache warm", ratio), ("cache cold", cold_ratio))
        if r is not None and (r > 1) != (c["ratio"].value > 1)
    ]
    text = f"{number(warm[0])} vs {number(warm[1])} s ({speed(ratio)})" if ratio else "not measured"
    if cold_ratio:
        text += f"; cold: {number(cold[0])} vs {number(cold[1])} s ({speed(cold_ratio)})"
    return {"warm": warm, "cold": cold, "ratio": ratio, "cold_ratio": cold_ratio, "text": text, "disagree": disagree}


def why_none(row: dict, columns: list[dict], pairing: Pairing) -> str:
    """Why a model has no ratio in a pairing: a column's reason other than "no run", with where: invalid runs
    before runs left out, the default size before others."""
    said = sorted(
        ((column, c) for column, c in zip(columns, row["cells"]) if c["text"] != "no run"),
        key=lambda item: (item[1]["state"] != INVALID, item[0]["size"] != "default"),
    )
    for column, c in said[:1]:
        return f"{c['state']}: {c['text']} ({column['machine']}, {column['size']} size)"
    return f"no {pairing.numerator_name} and {pairing.denominator_name} runs of it in a campaign"


def overview(campaign: pd.DataFrame, regime_maps: list[dict]) -> list[dict]:
    """The first screen, per pairing: per model (by regime) every ratio it has on any machine and size (measured
    ones first, the default size first among them; tiny data only where it has nothing else), each with its qualifiers, or why it has none; and the
    sentence that answers."""
    out = []
    for m in regime_maps:
        rows = []
        for g in m["groups"]:
            for row in g["rows"]:
                cells = [c for c in row["cells"] if "ratio" in c]
                cells = sorted(
                    [c for c in cells if c["size"] != "tiny"] or cells,
                    key=lambda c: (
                        c["state"] != MEASURED,
                        c["size"] != "default",
                        -c["ratio"].blocks,
                        size_order(c["size"]),
                        c["machine"],
                    ),
                )
                rows.append(
                    {
                        "model_id": row["model_id"],
                        "title": title_of(row["model_id"]),
                        "regime": g["name"],
                        "entries": [
                            {**c, "qualifiers": qualifiers(campaign, c), "to_result": to_result(campaign, c)}
                            for c in cells
                        ],
                        "why": "" if cells else why_none(row, m["columns"], m["pairing"]),
                    }
                )
        other_way = [r["title"] for r in rows if r["entries"] and r["entries"][0]["to_result"]["disagree"]]
        out.append(
            {
                "pairing": m["pairing"],
                "rows": rows,
                "sentence": answer_sentence(m["pairing"], rows, campaign),
                "other_way": other_way,
                "with_ratio": sum(1 for r in rows if r["entries"]),
            }
        )
    return out


def answer_sentence(pairing: Pairing, rows: list[dict], campaign: pd.DataFrame) -> str:
    """The pairing's answer in words: where the numerator is faster, slower or not clearly either (each model's
    ratios with a verdict at its best-evidenced size, one per machine: two machines may disagree, and the sentence
    says so), what has too few blocks, and when nothing answers, what the records hold instead."""
    measured, thin = [], []
    for r in rows:
        verdicts = [e for e in r["entries"] if e["state"] == MEASURED]
        if verdicts:
            measured += [(r["title"], e) for e in verdicts if e["size"] == verdicts[0]["size"]]
        elif r["entries"]:
            thin.append((r["title"], r["entries"][0]))
    name = f"{pairing.numerator_name} against {pairing.denominator_name} (ESS/s per model, compile excluded)"
    if not measured:
        kinds = {s["label"] for s in setups(campaign) if pairing.numerator(s)}
        runs = campaign[campaign.label.isin(kinds)]
        usable = int(answerable(runs).sum())
        held = (
            f"these records hold {count(len(runs))} {pairing.numerator_name} run(s), {count(usable)} of which an "
            f"answer may use" + (f" ({left_out_text(runs)} left out)" if usable < len(runs) else "")
            if len(runs)
            else f"these records hold no {pairing.numerator_name} run"
        )
        extra = "; ".join(f"{t} {times(e['ratio'].value)} ({no_verdict(e)})" for t, e in thin)
        return (
            f"{name}: not answered yet. No model has {MIN_BLOCKS} clean paired blocks of both; {held}."
            + (f" No verdict: {extra}." if extra else "")
            + f" What would answer it: {pairing.measured_by}."
        )
    parts = []
    # direction -> title -> its entries, a machine each
    by_direction: dict[str, dict[str, list[dict]]] = {d: {} for d in (FASTER, SLOWER, UNCLEAR)}
    for t, e in measured:
        by_direction[e["direction"]].setdefault(t, []).append(e)
    for direction_name, verb in (
        (FASTER, f"{pairing.numerator_name} faster"),
        (SLOWER, f"{pairing.numerator_name} slower"),
        (UNCLEAR, "no clear difference"),
    ):
        found = by_direction[direction_name]
        if len(found) > SENTENCE_DETAIL:
            parts.append(f"{verb} on {count(len(found))} models, {extremes(found)}")
        elif found:
            parts.append(
                f"{verb} on "
                + ", ".join(
                    f"{t} ({'; '.join(f'{interval(e["ratio"])}, {e["machine"]}' for e in entries)})"
                    for t, entries in found.items()
                )
            )
    if len(thin) > SENTENCE_DETAIL:
        parts.append(f"insufficient data on {count(len(thin))} models")
    elif thin:
        parts.append("insufficient data on " + ", ".join(f"{t} ({no_verdict(e)})" for t, e in thin))
    missing = sum(1 for r in rows if not r["entries"])
    sentence = f"{name}: " + "; ".join(parts) + (f"; {count(missing)} model(s) not measured." if missing else ".")
    summarised = [found for found in by_direction.values() if len(found) > SENTENCE_DETAIL]
    differ = [
        t for t in dict.fromkeys(t for t, _ in measured) if sum(t in found for found in by_direction.values()) > 1
    ]
    if summarised and differ:  # a summary hides which machine said what: name the models the machines disagree on
        sentence += f" The machines differ on {', '.join(differ)}."
    return sentence + (" Each model's ratio and interval: the figure below." if summarised else "")


def extremes(found: dict[str, list[dict]]) -> str:
    """The range of a direction's ratios, each end named: "from 1.26× (Logistic regression, epyc-2core) to 15.4×
    (Dogs, epyc-2core)"."""
    entries = sorted(((e["ratio"].value, t, e["machine"]) for t, es in found.items() for e in es))
    (low, low_title, low_machine), (high, high_title, high_machine) = entries[0], entries[-1]
    return f"from {times(low)} ({low_title}, {low_machine}) to {times(high)} ({high_title}, {high_machine})"


def no_verdict(c: dict) -> str:
    """Why a ratio gives no verdict: "2 blocks; 5 needed", "tiny data", or both."""
    blocks = c["ratio"].blocks
    return "; ".join(
        [f"{count(blocks)} block{'s' if blocks > 1 else ''}; {MIN_BLOCKS} needed"] * (blocks < MIN_BLOCKS)
        + ["tiny data"] * (c["size"] == "tiny")
    )
