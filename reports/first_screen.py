"""The first screen's words: per pairing the sentence that answers (``answer_sentence``) and, per regime, what
its models show (``regime_summary``), from the rows ``reports.answer.overview`` gathers; each model counted once.
"""

from __future__ import annotations

import itertools
import re

import pandas as pd

from stanjax.reports.headline import Pairing, answerable, left_out_text
from stanjax.reports.numbers import count, interval, span, speed, times
from stanjax.reports.regimes import FASTER, INSUFFICIENT, INVALID, MEASURED, SLOWER, UNCLEAR, setups
from stanjax.reports.stats import MIN_BLOCKS

SENTENCE_DETAIL = 3  # a direction with more models than this is summarised: the first screen stays one screen


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
        extra = "; ".join(f"{t} {so_far(e['ratio'])} ({no_verdict(e)})" for t, e in thin)
        return (
            f"{name}: not answered yet. No model has {MIN_BLOCKS} clean paired blocks of both; {held}."
            + (f" No verdict: {extra}." if extra else "")
            + f" What would answer it: {pairing.measured_by}."
        )
    # direction -> title -> its entries, a machine each; a model whose machines disagree is counted once, apart
    by_direction: dict[str, dict[str, list[dict]]] = {d: {} for d in (FASTER, SLOWER, UNCLEAR)}
    per_model: dict[str, list[dict]] = {}
    for t, e in measured:
        per_model.setdefault(t, []).append(e)
    differ = {t: es for t, es in per_model.items() if len({e["direction"] for e in es}) > 1}
    for t, es in per_model.items():
        if t not in differ:
            by_direction[es[0]["direction"]][t] = es
    parts = []
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
    if differ:  # machines of one model disagree: each machine's verdict, named
        parts.append(
            f"the machines differ on {count(len(differ))} model{'s' if len(differ) > 1 else ''} ("
            + "; ".join(
                f"{t}: " + ", ".join(f"{e['direction']} on {e['machine']}{over(e, es)}" for e in es)
                for t, es in differ.items()
            )
            + ")"
        )
    if len(thin) > SENTENCE_DETAIL:
        parts.append(f"insufficient data on {count(len(thin))} models")
    elif thin:
        parts.append(
            "insufficient data on " + ", ".join(f"{t} ({so_far(e['ratio'])}, {no_verdict(e)})" for t, e in thin)
        )
    invalid = [r for r in rows if not r["entries"] and r.get("why", "").startswith(f"{INVALID}:")]
    if invalid:
        parts.append(
            f"neither side valid on {count(len(invalid))} model{'s' if len(invalid) > 1 else ''} ("
            + "; ".join(f"{r['title']}: {gates_failed(r['why'])}" for r in invalid)
            + ")"
        )
    missing = sum(1 for r in rows if not r["entries"]) - len(invalid)
    sentence = f"{name}: " + "; ".join(parts) + (f"; {count(missing)} model(s) not measured." if missing else ".")
    summarised = [found for found in by_direction.values() if len(found) > SENTENCE_DETAIL]
    return sentence + (" Each model's ratio and interval: the figure below." if summarised else "")


def over(entry: dict, entries: list[dict]) -> str:
    """Where one model's entries on several machines are ratios of different setups (a Stan build or program one
    machine has and another lacks), the setups of this one: the disagreement may be theirs, not the machines'."""
    if len({(e.get("numerator"), e.get("denominator")) for e in entries}) == 1:
        return ""
    return f" ({entry['numerator']} ÷ {entry['denominator']})"


def so_far(ratio) -> str:
    """A ratio without a verdict, with its direction: "2.70× faster so far"."""
    return f"{speed(ratio.value)} so far"


def gates_failed(why: str) -> str:
    """The gates an invalid model's runs failed, from its reason ("invalid: A 0 of 2 valid (failed: ess, rhat);
    B 0 of 5 valid (failed: completed) (machine, size)"): "failed ess, rhat; completed"."""
    found = list(dict.fromkeys(re.findall(r"failed: ([^)]*)\)", why)))
    return "failed " + "; ".join(found) if found else why.removeprefix(f"{INVALID}: ")


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


def machine_slug(label: str) -> str:
    """A machine label without its fingerprint ("epyc-2core-cb44675b" -> "epyc-2core")."""
    return re.sub(r"-[0-9a-f]{8}$", "", label)


def regime_summary(overview: list[dict]) -> list[dict]:
    """The first screen's "when": per regime (the regime map's order) and pairing, one short cell: its models
    counted once each (at their best-evidenced entry: measured first, the default size first): the verdicts with
    the range of their ratios in ESS/s and in time to 1,000 effective draws and the machines they come from, then
    the models two machines disagree on, ratios without a verdict yet (with their direction), the models neither
    side sampled validly, and those not measured."""
    regimes = list(dict.fromkeys(r["regime"] for r in overview[0]["rows"]))
    found = [
        {
            "regime": regime,
            "models": sum(r["regime"] == regime for r in overview[0]["rows"]),
            "cells": [regime_cell([r for r in o["rows"] if r["regime"] == regime]) for o in overview],
        }
        for regime in regimes
    ]
    # regimes with no run in any pairing: one row, so that the zoo's size does not push the answer down
    unmeasured = [f for f in found if all(c["verdict"] == "not-measured" for c in f["cells"])]
    if len(unmeasured) < 2:
        return found
    rest = {"verdict": "not-measured", "text": "no run yet: the regime map lists their models"}
    return [f for f in found if f not in unmeasured] + [
        {
            "regime": f"{count(len(unmeasured))} more regimes",
            "models": sum(f["models"] for f in unmeasured),
            "cells": [rest] * len(overview),
        }
    ]


def column_widths(summary: list[dict], chars_per_percent: float = 0.9, step: int = 5) -> list[int]:
    """The regime summary's column widths in percent (the regime's name, then each pairing), in steps of ``step``,
    at least two: those that make the table the fewest lines tall at ``chars_per_percent`` (an 800 px screen's).
    The browser's own split left a column of "not measured" as wide as one of verdicts."""
    texts = [[f"{r['regime']} ({r['models']})", *(c["text"] for c in r["cells"])] for r in summary]
    if not texts:
        return []

    columns, steps = len(texts[0]), 100 // step
    text = [sum(len(row[i]) for row in texts) for i in range(columns)]

    def lines_then_share(widths: tuple[int, ...]) -> tuple[int, float]:
        """The table's lines; of equal ones, the nearest to each column's share of the text."""
        lines = sum(max(-(-len(t) // int(w * chars_per_percent)) for t, w in zip(row, widths)) for row in texts)
        return lines, sum(abs(w - 100 * n / sum(text)) for w, n in zip(widths, text))

    splits: list[tuple[int, ...]] = [
        tuple(step * n for n in (*s, steps - sum(s)))
        for s in itertools.product(range(2, steps), repeat=columns - 1)
        if sum(s) < steps - 1
    ]
    best = min(splits, key=lines_then_share)
    return list(best)


def regime_cell(rows: list[dict]) -> dict:
    """One regime's models in one pairing: ``verdict`` (the direction its verdicts share, "mixed", or the state of
    its models where none has a verdict) and ``text``."""
    measured, differ, thin = [], [], []
    for r in rows:
        verdicts = [e for e in r["entries"] if e["state"] == MEASURED]
        if len({e["direction"] for e in verdicts}) > 1:
            differ.append(r["title"])
        elif verdicts:
            measured.append(verdicts[0])
        elif r["entries"]:
            thin.append((r["title"], r["entries"][0]))
    parts = []
    for direction_name in (FASTER, SLOWER, UNCLEAR):
        values = [e["ratio"].value for e in measured if e["direction"] == direction_name]
        if values:
            word = "no clear difference" if direction_name == UNCLEAR else direction_name
            parts.append(f"{word} on {count(len(values))} ({ratios(values)})")
    to_result = [e["to_result"]["ratio"] for e in measured if e["to_result"]["ratio"]]
    if to_result:
        parts.append(f"to 1,000 ESS {ratios(to_result)}")
    if measured:
        parts[-1] += f" [{', '.join(sorted({machine_slug(e['machine']) for e in measured}))}]"
    if differ:
        parts.append(f"machines differ on {', '.join(differ)}")
    if len(thin) == 1:
        t, e = thin[0]
        parts.append(f"{t}: {so_far(e['ratio'])} ({no_verdict(e)}, {machine_slug(e['machine'])})")
    elif thin:
        parts.append(f"{count(len(thin))} with too few blocks")
    invalid = [r for r in rows if not r["entries"] and r.get("why", "").startswith(f"{INVALID}:")]
    parts += [f"neither side valid: {r['title']} ({gates_failed(r['why'])})" for r in invalid]
    missing = sum(1 for r in rows if not r["entries"]) - len(invalid)
    if missing:
        parts.append(f"not measured: {count(missing)}")
    directions = {e["direction"] for e in measured} | ({"mixed"} if differ else set())
    verdict = (
        directions.pop()
        if len(directions) == 1
        else "mixed"
        if directions
        else INSUFFICIENT
        if thin
        else INVALID
        if invalid
        else "not-measured"
    )
    return {"verdict": verdict, "text": "; ".join(parts)}


def ratios(values: list[float]) -> str:
    """Ratios as their range: "3.96×", "1.26–15.4×", "2.71× slower to 1.20×"."""
    low, high = min(values), max(values)
    return times(low) if f"{low:.3g}" == f"{high:.3g}" else span(low, high)
