"""The answer first: for each pairing the report answers (``headline.PAIRINGS``), the first screen (``overview``):
the sentence that answers (``reports.first_screen``) and, per model, every ratio of its regime map
(``reports.regimes``) with its qualifiers and, over the bundled Stan, what CmdStan measured (``gap_note``);
where each ratio comes from (ESS per gradient, gradients per second, the share of the run spent sampling); and the
resources each engine setup had.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stanjax import models
from stanjax.reports.first_screen import answer_sentence, machine_slug, short_sentence
from stanjax.reports.headline import BUNDLED_STAN, Pairing
from stanjax.reports.numbers import count, number, span, speed, times
from stanjax.reports.regimes import INVALID, MEASURED, size_order
from stanjax.reports.stats import MIN_BLOCKS
from stanjax.runner.core.config import is_expert, stanc_options
from stanjax.runner.core.engine_registry import STAN


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


def counted_as(model_id: str) -> str:
    """What the headline counts count a model under: its family of near-duplicates (``ModelSpec.variant_of``),
    else its title."""
    spec = models.registry().get(model_id)
    return spec.counted_as if spec else model_id


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


def why_none(row: dict, columns: list[dict], pairing: Pairing, old_build: frozenset[str] = frozenset()) -> str:
    """Why a model has no ratio in a pairing: a column's reason other than "no run", with where: invalid runs
    before runs left out, today's Stan build before httpstan's (``old_build``: its labels; issue 81), the default
    size before others."""
    said = sorted(
        ((column, c) for column, c in zip(columns, row["cells"]) if c["text"] != "no run"),
        key=lambda item: (
            item[1]["state"] != INVALID,
            item[1].get("denominator") in old_build,
            item[0]["size"] != "default",
        ),
    )
    for column, c in said[:1]:
        return f"{c['state']}: {c['text']} ({column['machine']}, {column['size']} size)"
    return f"no {pairing.numerator_name} and {pairing.denominator_name} runs of it in a campaign"


# Where CmdStan samples a model faster than the bundled Stan by more than this, every ratio over the bundled Stan
# on that model and machine says so (issue 63: the bundled Stan is the baseline only where it is not slower).
FRONT_END_GAP = 1.10


def front_end_gaps(comparisons: list[dict]) -> dict[tuple[str, str, str, str], dict]:
    """(machine's slug, size, model, bundled Stan's label) -> how much faster CmdStan sampled that model there,
    where by more than ``FRONT_END_GAP`` with an interval above 1: from the Stan side's CmdStan-vs-bundled
    pairings of one program."""
    gaps = {}
    for c in comparisons:
        a, b = c["numerator_setup"], c["denominator_setup"]
        if (a["engine"], a["front_end"], b["engine"]) != ("stan", "cmdstan", "stan") or (
            b["front_end"] not in BUNDLED_STAN or a.get("program", "") != b.get("program", "")
        ):
            continue
        for m in c["models"]:
            if m["warm"].value > FRONT_END_GAP and m["warm"].low > 1 and m["warm"].blocks >= MIN_BLOCKS:
                gaps[machine_slug(c["machine"]), c["size"], m["model_id"], c["denominator"]] = {
                    "machine": c["machine"],
                    "numerator": c["numerator"],
                    "front_end": b["front_end"],
                    "ratio": m["warm"],
                }
    return gaps


def gap_note(gaps: dict, c: dict) -> str:
    """What a ratio over the bundled Stan should say where CmdStan sampled the same program faster there."""
    gap = gaps.get((machine_slug(c["machine"]), c["size"], c.get("model_id", ""), c["denominator"]))
    if gap is None:
        return ""
    r = gap["ratio"]
    measured = f"{speed(r.value)} ({span(r.low, r.high)})"
    return (
        f"{c['denominator']} is the bundled Stan{' as httpstan built it' if gap['front_end'] == 'httpstan' else ''}: "
        f"{gap['numerator']} sampled this program {measured} in ESS/s on "
        f"{gap['machine']}; over CmdStan this ratio would be about {times(c['ratio'].value / r.value)} (estimated: "
        "the two medians divided, not measured in one block)"
    )


def over_expert_programs(cells: list[dict], model_id: str, campaign: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """A model with a Stan expert's program (``stan/expert/``) is answered from its ratios over that program alone
    (issue 63: no first-screen ratio rests on a program an expert would rewrite): its cells split into those and
    the ones over the published program, which stay in the regime map. Other models: every cell, none set apart."""
    spec = models.registry().get(model_id)
    if spec is None or spec.stan_expert_file is None:
        return cells, []
    programs = campaign["program"] if "program" in campaign else pd.Series("", index=campaign.index)
    expert_runs = set(campaign.run_id[[isinstance(p, str) and is_expert(p) for p in programs]])
    kept = [c for c in cells if any(set(ids) & expert_runs for ids in c["entry"]["run_ids"])]
    return kept, [c for c in cells if not any(c is k for k in kept)]


def as_published(cells: list[dict]) -> str:
    """Why a model with an expert's program has no answer though it has ratios: they are over the published one."""
    found = "; ".join(f"{speed(c['ratio'].value)} on {c['machine']}" for c in cells)
    return f"as published only ({found}): the Stan expert's program (stan/expert/) not run beside it"


def httpstan_labels(campaign: pd.DataFrame) -> frozenset[str]:
    """The labels of the bundled Stan as httpstan built it (front end ``httpstan``)."""
    return frozenset(campaign.label[campaign.front_end == "httpstan"]) if "front_end" in campaign else frozenset()


def over_todays_stan(cells: list[dict], campaign: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """Issue 81: no first-screen ratio divides by the bundled Stan as httpstan built it (``httpstan-CPU``: STAN_THREADS
    in every program and the old reader, up to 2× a gradient, the glossary says): ``cells`` split into those over
    today's builds and those over httpstan's, which stay in the regime map and the pairings' tables."""
    built_by_httpstan = httpstan_labels(campaign)
    kept = [c for c in cells if c["denominator"] not in built_by_httpstan]
    return kept, [c for c in cells if c["denominator"] in built_by_httpstan]


def over_httpstan_only(cells: list[dict]) -> str:
    """Why a model has no answer though it has ratios: they are over httpstan's build of the bundled Stan."""
    found = "; ".join(f"{speed(c['ratio'].value)} on {c['machine']}" for c in cells)
    return (
        f"over httpstan-CPU only ({found}): the bundled Stan as httpstan built it, not as it is built today; "
        "no campaign of it over today's build yet"
    )


CPU_KEY = "jax-cpu-vs-stan-cpu"  # the pairing the first screen answers first: what the records can answer


def cpu_answer(overview: list[dict]) -> dict:
    """The overview's JAX-CPU ÷ Stan-CPU entry."""
    return next(o for o in overview if o["pairing"].key == CPU_KEY)


def overview(campaign: pd.DataFrame, regime_maps: list[dict], gaps: dict | None = None) -> list[dict]:
    """The first screen, per pairing: per model (by regime) every ratio it has on any machine and size (measured
    ones first, the default size first among them; tiny data only where it has nothing else; over a Stan expert's
    program where the model has one: ``over_expert_programs``; over today's Stan builds: ``over_todays_stan``), each
    with its
    qualifiers (and, over the bundled Stan, what CmdStan measured where it sampled faster: ``gaps``), or why it
    has none; and the sentence that answers."""
    out = []
    for m in regime_maps:
        rows = []
        for g in m["groups"]:
            for row in g["rows"]:
                cells, published = over_expert_programs(
                    [c for c in row["cells"] if "ratio" in c], row["model_id"], campaign
                )
                cells, old_build = over_todays_stan(cells, campaign)
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
                        "counted_as": counted_as(row["model_id"]),
                        "regime": g["name"],
                        "entries": [
                            {
                                **c,
                                "qualifiers": qualifiers(campaign, c),
                                "to_result": to_result(campaign, c),
                                "front_end_gap": gap_note(gaps or {}, {**c, "model_id": row["model_id"]}),
                            }
                            for c in cells
                        ],
                        "why": ""
                        if cells
                        else as_published(published)
                        if published
                        else over_httpstan_only(old_build)
                        if old_build
                        else why_none(row, m["columns"], m["pairing"], httpstan_labels(campaign)),
                    }
                )
        # a family of near-duplicates counted once, as in the sentence
        other_way = [r["counted_as"] for r in rows if r["entries"] and r["entries"][0]["to_result"]["disagree"]]
        out.append(
            {
                "pairing": m["pairing"],
                "rows": rows,
                "sentence": answer_sentence(m["pairing"], rows, campaign),
                "short": short_sentence(m["pairing"], rows),
                "other_way": list(dict.fromkeys(other_way)),
                "with_ratio": len({r["counted_as"] for r in rows if r["entries"]}),
            }
        )
    return out
