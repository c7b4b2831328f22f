"""Records made under a known bug: listed in ``results/SUPERSEDED`` (TOML, reviewed like code), kept and shown,
never edited or deleted, and left out of every answer (the report's ratios and claims, ``stanjax compare``).

An entry is ``[[superseded]]`` with ``why``, ``fixed_by`` (the commit that fixed it) and a selector: either
``campaigns`` (campaign ids, or campaign folders under ``results/``, whose records' campaign ids are read),
optionally narrowed by ``engines``, ``models`` and ``commits`` (the commits the records were made at, as prefixes:
a campaign grown with ``--resume`` across a fix); or ``rule``, one of :data:`RULES`, for a bug no campaign list
states as well (every run of a kind recorded before a field existed).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from stanjax.models import ROOT, UsageError
from stanjax.runner.core import records
from stanjax.runner.core.records import RunRecord

PATH = ROOT / "results" / "SUPERSEDED"

# A rule: what it selects, in words (the report says it) and as a test.
RULES: dict[str, tuple[str, Callable[[RunRecord], bool]]] = {
    "isa-unrecorded-stan": (
        "every Stan run whose record names no instruction set",
        lambda r: r.engine == "stan" and r.isa == "",
    ),
    "irt-2pl-noncentred": (
        "every IRT-2PL run of the programs with non-centred difficulties (its record names b_raw)",
        lambda r: (
            r.model_id == "irt_synth-irt_2pl_hierarchical"
            # a failed run has no posterior to tell the program by
            and r.metrics is not None
            and any(name.startswith("b_raw") for name in r.metrics.posterior_mean)
        ),
    ),
    "movielens-free-biases": (
        "every matrix factorisation run whose user biases' posterior means do not sum to zero "
        "(the programs before the biases were declared to)",
        lambda r: r.model_id == "movielens_synth-matrix_factorization" and not biases_sum_to_zero(r),
    ),
}


def biases_sum_to_zero(record: RunRecord) -> bool:
    """A sum-to-zero vector's draws sum to zero to rounding, and so do their means; free biases' never do. A failed
    run has no means: it is not told apart, and counts as summing to zero."""
    if record.metrics is None:
        return True
    means = [v for name, v in record.metrics.posterior_mean.items() if name.startswith("b_user[")]
    return bool(means) and abs(sum(means)) < 1e-6


KEYS = {"why", "fixed_by", "campaigns", "engines", "models", "commits", "rule"}


@dataclass(frozen=True)
class Entry:
    why: str
    fixed_by: str
    selector: str  # the selector in words, as the report lists it
    rule: str = ""
    campaigns: frozenset[str] = frozenset()  # campaign ids (folders resolved)
    engines: frozenset[str] = frozenset()  # empty: every engine
    models: frozenset[str] = frozenset()  # empty: every model
    commits: frozenset[str] = frozenset()  # prefixes of the commits the records were made at; empty: every commit

    def covers(self, record: RunRecord) -> bool:
        if self.rule:
            return RULES[self.rule][1](record)
        return (
            record.campaign_id in self.campaigns
            and (not self.engines or record.engine in self.engines)
            and (not self.models or record.model_id in self.models)
            and (not self.commits or any((record.provenance.git_commit or "").startswith(c) for c in self.commits))
        )


def strings(value, what: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{what} must be a non-empty list of strings")
    return value


def campaign_ids(names: list[str], results: Path) -> frozenset[str]:
    """Campaign ids as written, and a folder's (a name with a "/": a folder under ``results``) read from its
    records."""
    ids = set()
    for name in names:
        if "/" not in name:
            ids.add(name)
            continue
        folder = results / name
        found = {r.campaign_id for r in records.read(folder, summaries=False)} if folder.is_dir() else set()
        if not found:
            raise ValueError(f"campaign folder {name!r} holds no records under {results}")
        ids |= found
    return frozenset(ids)


def entry(table, results: Path) -> Entry:
    if not isinstance(table, dict):
        raise ValueError("is not a table")
    unknown = set(table) - KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(KEYS))})")
    for key in ("why", "fixed_by"):
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise ValueError(f"needs {key} (a non-empty string)")
    if ("rule" in table) == ("campaigns" in table):
        raise ValueError('needs exactly one selector: campaigns = [...] or rule = "..."')
    if "rule" in table:
        if table["rule"] not in RULES:
            raise ValueError(f"unknown rule {table['rule']!r} (known: {', '.join(RULES)})")
        if {"engines", "models", "commits"} & set(table):
            raise ValueError("a rule takes no engines, models or commits")
        return Entry(table["why"], table["fixed_by"], RULES[table["rule"]][0], rule=table["rule"])
    names = strings(table["campaigns"], "campaigns")
    engines = strings(table["engines"], "engines") if "engines" in table else []
    model_ids = strings(table["models"], "models") if "models" in table else []
    commits = strings(table["commits"], "commits") if "commits" in table else []
    if any(len(c) < 7 or not all(ch in "0123456789abcdef" for ch in c) for c in commits):
        raise ValueError("commits must be commit hashes (7 or more lower-case hex digits)")
    selector = f"campaigns {', '.join(names)}" + "".join(
        f"; {what} {', '.join(values)}"
        for what, values in (("engines", engines), ("models", model_ids), ("made at commits", commits))
        if values
    )
    return Entry(
        table["why"],
        table["fixed_by"],
        selector,
        campaigns=campaign_ids(names, results),
        engines=frozenset(engines),
        models=frozenset(model_ids),
        commits=frozenset(commits),
    )


@cache
def load(path: Path = PATH) -> tuple[Entry, ...]:
    """The entries of a SUPERSEDED file (none if there is no file); a malformed file is a UsageError naming the
    file and the entry."""
    if not path.exists():
        return ()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    if set(document) - {"superseded"} or not isinstance(document.get("superseded", []), list):
        raise UsageError(f"{path}: only [[superseded]] entries may stand in it")
    out = []
    for i, table in enumerate(document.get("superseded", []), 1):
        try:
            out.append(entry(table, path.parent))
        except ValueError as e:
            raise UsageError(f"{path}: entry {i}: {e}") from None
    return tuple(out)


def reason(record: RunRecord, entries: tuple[Entry, ...]) -> str | None:
    """Why the record is superseded (the first entry that covers it), or None."""
    found = next((e for e in entries if e.covers(record)), None)
    return f"{found.why} (fixed by {found.fixed_by})" if found else None


def left_out(record: RunRecord, entries: tuple[Entry, ...]) -> str:
    """Why no answer (a ratio, a claim, a nightly comparison) may use the record, "" if one may: its load first
    (none recorded, not measurable, or loaded), then whether it is superseded."""
    if not record.clean:
        return "no load recorded" if record.load is None else "loaded" if record.load.loaded else "load not measured"
    return "superseded" if reason(record, entries) else ""
