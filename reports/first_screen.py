"""The first screen's words: per pairing the sentence that answers (``answer_sentence``) and, per regime, what
its models show (``regime_summary``), from the rows ``reports.answer.overview`` gathers; each model counted once, and
a family of near-duplicates (``ModelSpec.variant_of``: NES's eight years, the kidiq regressions) once for all of it.
"""

from __future__ import annotations

import itertools
import re
import statistics

import pandas as pd

from stanjax.reports.headline import Pairing, answerable, left_out_text
from stanjax.reports.numbers import count, interval, span, speed, times
from stanjax.reports.regimes import FASTER, INSUFFICIENT, INVALID, MEASURED, SLOWER, UNCLEAR, setups
from stanjax.reports.stats import MIN_BLOCKS

SENTENCE_DETAIL = 3  # a direction with more models than this is summarised: the first screen stays one screen


def counted_once(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """Rows grouped by family of near-duplicates (``ModelSpec.variant_of``; a model without one is its own), in the
    order they come: every count on the first screen counts a family once."""
    grouped: dict[str, list[dict]] = {}
    for r in rows:
        grouped.setdefault(r.get("counted_as") or r["title"], []).append(r)
    return list(grouped.items())


def answer_sentence(pairing: Pairing, rows: list[dict], campaign: pd.DataFrame) -> str:
    """The pairing's answer in words: where the numerator is faster, slower or not clearly either (each model's
    ratios with a verdict at its best-evidenced size, one per machine: two machines may disagree, and the sentence
    says so; a family of near-duplicates counted once, with its members' range), what has too few blocks, and when
    nothing answers, what the records hold instead."""
    units = counted_once(rows)
    measured, thin = verdicts_of_units(units)
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
    # direction -> unit -> its entries, a machine (and a member) each; a unit whose entries disagree counted apart
    by_direction: dict[str, dict[str, list[dict]]] = {d: {} for d in (FASTER, SLOWER, UNCLEAR)}
    per_unit: dict[str, list[dict]] = {}
    for t, e in measured:
        per_unit.setdefault(t, []).append(e)
    differ = {t: es for t, es in per_unit.items() if len({e["direction"] for e in es}) > 1}
    for t, es in per_unit.items():
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
            parts.append(f"{verb} on " + ", ".join(shown(t, entries) for t, entries in found.items()))
    machines_differ = {t: es for t, es in differ.items() if len({e["member"] for e in es}) == 1}
    if machines_differ:  # machines of one model disagree: each machine's verdict, named
        parts.append(
            f"the machines differ on {count(len(machines_differ))} model{'s' if len(machines_differ) > 1 else ''} ("
            + "; ".join(
                f"{t}: " + ", ".join(f"{e['direction']} on {e['machine']}{over(e, es)}" for e in es)
                for t, es in machines_differ.items()
            )
            + ")"
        )
    members_differ = {t: es for t, es in differ.items() if t not in machines_differ}
    if members_differ:  # a family's near-duplicates disagree: how many of them point each way
        parts.append(
            f"the near-duplicates of {count(len(members_differ))} "
            f"famil{'ies' if len(members_differ) > 1 else 'y'} differ ("
            + "; ".join(f"{t}: {directions_of_members(es)}" for t, es in members_differ.items())
            + ")"
        )
    if len(thin) > SENTENCE_DETAIL:
        parts.append(f"insufficient data on {count(len(thin))} models")
    elif thin:
        parts.append(
            "insufficient data on " + ", ".join(f"{t} ({so_far(e['ratio'])}, {no_verdict(e)})" for t, e in thin)
        )
    unanswered = [(t, members) for t, members in units if not any(r["entries"] for r in members)]
    invalid = [
        (t, failed)
        for t, members in unanswered
        if (failed := [r for r in members if r.get("why", "").startswith(f"{INVALID}:")])
    ]
    if invalid:
        parts.append(
            f"neither side valid on {count(len(invalid))} model{'s' if len(invalid) > 1 else ''} ("
            + "; ".join(f"{t}: {gates_failed(failed[0]['why'])}" for t, failed in invalid)
            + ")"
        )
    missing = len(unanswered) - len(invalid)
    sentence = f"{name}: " + "; ".join(parts) + (f"; {count(missing)} model(s) not measured." if missing else ".")
    summarised = [found for found in by_direction.values() if len(found) > SENTENCE_DETAIL]
    return (
        sentence + (" Each model's ratio and interval: the figure below." if summarised else "") + families_note(units)
    )


def verdicts_of_units(units: list[tuple[str, list[dict]]]) -> tuple[list[tuple[str, dict]], list[tuple[str, dict]]]:
    """Each unit's entries with a verdict (every machine's, at its members' best-evidenced size, each marked with
    its ``member``), and the units without one but with a ratio (its first)."""
    measured, thin = [], []
    for unit, members in units:
        verdicts_of_unit, first_thin = [], None
        for r in members:
            verdicts = [e for e in r["entries"] if e["state"] == MEASURED]
            if verdicts:
                verdicts_of_unit += [{**e, "member": r["title"]} for e in verdicts if e["size"] == verdicts[0]["size"]]
            elif r["entries"] and first_thin is None:
                first_thin = r["entries"][0]
        if verdicts_of_unit:
            measured += [(unit, e) for e in verdicts_of_unit]
        elif first_thin is not None:
            thin.append((unit, first_thin))
    return measured, thin


def short_sentence(pairing: Pairing, rows: list[dict]) -> str | None:
    """The first screen's sentence, read in seconds: on which machines, how many model families (a family of
    near-duplicates once) the numerator samples faster, slower or not clearly either, with the ranges (the
    models named where a direction has few), the rest counted, and on how many of those with a verdict the
    denominator reaches 1,000 effective draws sooner once compilation is counted. None where no model has a
    verdict: ``answer_sentence`` then says what the records hold and what would answer."""
    units = counted_once(rows)
    measured, thin = verdicts_of_units(units)
    if not measured:
        return None
    per_unit: dict[str, list[dict]] = {}
    for t, e in measured:
        per_unit.setdefault(t, []).append(e)
    direction = {
        t: es[0]["direction"] if len({e["direction"] for e in es}) == 1 else "mixed" for t, es in per_unit.items()
    }

    def way(wanted: str, word: str) -> str:
        found = [t for t, d in direction.items() if d == wanted]
        values = [e["ratio"].value for t in found for e in per_unit[t]]
        named = f": {'; '.join(found)}" if len(found) <= SENTENCE_DETAIL else ""
        return f"{word} on {count(len(found))} ({ratios(values)}{named})" if found else ""

    num, den = pairing.numerator_name, pairing.denominator_name
    faster = sum(d == FASTER for d in direction.values())
    ways = [w for w in (way(SLOWER, "slower"), way(UNCLEAR, "not clearly either")) if w]
    head = f"{num} samples {count(faster)} of {count(len(units))} model families faster than {den} in ESS/s"
    if faster:
        head += f" ({ratios([e['ratio'].value for t, d in direction.items() if d == FASTER for e in per_unit[t]])})"
    unanswered = [members for _, members in units if not any(r["entries"] for r in members)]
    invalid = sum(any(r.get("why", "").startswith(f"{INVALID}:") for r in members) for members in unanswered)
    rest = [
        f"the machines or near-duplicates differ on {count(n)}"
        if (n := sum(d == "mixed" for d in direction.values()))
        else "",
        f"{count(len(thin))} {'has' if len(thin) == 1 else 'have'} too few blocks" if thin else "",
        f"neither side is valid on {count(invalid)}" if invalid else "",
        f"{count(len(unanswered) - invalid)} not measured" if len(unanswered) > invalid else "",
    ]
    sooner = [
        t
        for t, d in direction.items()
        if d != "mixed"
        and (r := [e["to_result"]["ratio"] for e in per_unit[t] if e["to_result"]["ratio"]])
        and statistics.median(r) < 1
    ]
    judged = sum(d != "mixed" for d in direction.values())
    machines = sorted({machine_slug(e["machine"]) for _, e in measured})
    return (
        f"On {' and '.join(machines)}, compile excluded, {head}"
        + "".join(f", {w}" for w in ways)
        + "".join(f"; {r}" for r in rest if r)
        + f". Counting compilation in a fresh process, {den} reaches 1,000 effective draws sooner on "
        + f"{count(len(sooner))} of the {count(judged)} with a verdict."
    )


def shown(unit: str, entries: list[dict]) -> str:
    """A unit of the sentence with its ratios: a model's interval on each machine, a family's members' range."""
    members = {e["member"] for e in entries}
    if len(members) > 1:
        return f"{unit} ({count(len(members))} posteriors, {ratios([e['ratio'].value for e in entries])})"
    return f"{unit} ({'; '.join(f'{interval(e["ratio"])}, {e["machine"]}' for e in entries)})"


def directions_of_members(entries: list[dict]) -> str:
    """How many of a family's members point each way: "faster on 5, no clear difference on 3"."""
    words = {FASTER: "faster", SLOWER: "slower", UNCLEAR: "no clear difference"}
    return ", ".join(
        f"{words[d]} on {count(len({e['member'] for e in entries if e['direction'] == d}))}"
        for d in (FASTER, SLOWER, UNCLEAR)
        if any(e["direction"] == d for e in entries)
    )


def families_note(units: list[tuple[str, list[dict]]]) -> str:
    """The sentence's last words where a family of near-duplicates was counted once: which, and how many each."""
    shared = [(t, members) for t, members in units if len(members) > 1]
    if not shared:
        return ""
    named = "; ".join(f"{t} ({count(len(members))} posteriors)" for t, members in shared)
    return f" Near-duplicates count once, as a family: {named}."


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


def regime_summary(overview: list[dict], order: list[str] | None = None) -> list[dict]:
    """The first screen's "when": per regime (those in ``order`` first, in its order: the crossover figure's, along
    the work of a gradient; the others in the regime map's) and pairing, one short cell: its models
    counted once each (at their best-evidenced entry: measured first, the default size first): the verdicts with
    the range of their ratios in ESS/s and in time to 1,000 effective draws and the machines they come from, then
    the models two machines disagree on, ratios without a verdict yet (with their direction), the models neither
    side sampled validly, and those not measured."""
    regimes = list(dict.fromkeys(r["regime"] for r in overview[0]["rows"]))
    ranked = {regime: i for i, regime in enumerate(dict.fromkeys(order or []))}
    regimes.sort(key=lambda regime: ranked.get(regime, len(ranked)))  # stable: the rest keep the map's order
    found = [
        {
            "regime": regime,
            "models": len(counted_once([r for r in overview[0]["rows"] if r["regime"] == regime])),
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
    """One regime's models in one pairing, a family of near-duplicates counted once: ``verdict`` (the direction
    its verdicts share, "mixed", or the state of its models where none has a verdict) and ``text``."""
    measured: list[list[dict]] = []  # a unit's verdict entries, a member each
    differ: list[str] = []  # a model whose machines disagree
    split_families: list[str] = []  # a family whose near-duplicates disagree
    thin: list[tuple[str, dict]] = []
    units = counted_once(rows)
    for unit, members in units:
        entries, first_thin, split = [], None, False
        for r in members:
            verdicts = [e for e in r["entries"] if e["state"] == MEASURED]
            if len({e["direction"] for e in verdicts}) > 1:
                split = True
            elif verdicts:
                entries.append(verdicts[0])
            elif r["entries"] and first_thin is None:
                first_thin = r["entries"][0]
        if split or len({e["direction"] for e in entries}) > 1:
            (differ if len(members) == 1 else split_families).append(unit)
        elif entries:
            measured.append(entries)
        elif first_thin is not None:
            thin.append((unit, first_thin))
    flat = [e for entries in measured for e in entries]
    parts = []
    for direction_name in (FASTER, SLOWER, UNCLEAR):
        values = [e["ratio"].value for entries in measured for e in entries if e["direction"] == direction_name]
        if values:
            units_that_way = sum(1 for entries in measured if entries[0]["direction"] == direction_name)
            word = "no clear difference" if direction_name == UNCLEAR else direction_name
            parts.append(f"{word} on {count(units_that_way)} ({ratios(values)})")
    to_result = [e["to_result"]["ratio"] for e in flat if e["to_result"]["ratio"]]
    if to_result:
        parts.append(f"to 1,000 ESS {ratios(to_result)}")
    if measured:
        parts[-1] += f" [{', '.join(sorted({machine_slug(e['machine']) for e in flat}))}]"
    if differ:
        parts.append(f"machines differ on {', '.join(differ)}")
    if split_families:
        parts.append(f"near-duplicates differ in {', '.join(split_families)}")
    if len(thin) == 1:
        t, e = thin[0]
        parts.append(f"{t}: {so_far(e['ratio'])} ({no_verdict(e)}, {machine_slug(e['machine'])})")
    elif thin:
        parts.append(f"{count(len(thin))} with too few blocks")
    unanswered = [(t, members) for t, members in units if not any(r["entries"] for r in members)]
    invalid = [
        (t, found)
        for t, members in unanswered
        if (found := [r for r in members if r.get("why", "").startswith(f"{INVALID}:")])
    ]
    parts += [f"neither side valid: {t} ({gates_failed(found[0]['why'])})" for t, found in invalid]
    missing = len(unanswered) - len(invalid)
    if missing:
        parts.append(f"not measured: {count(missing)}")
    directions = {entries[0]["direction"] for entries in measured} | ({"mixed"} if differ or split_families else set())
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
