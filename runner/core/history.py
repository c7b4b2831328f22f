"""The history store: ``<history>/<machine>/<run folder>/results.jsonl``, one folder per nightly (or other)
campaign, never rewritten (a closed one may be committed gzipped, ``results.jsonl.gz``). Machines are named by
``Machine.slug``; folders sort by their UTC start."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

from stanjax.models import UsageError
from stanjax.runner.core import environment, records


def new_folder(history: Path, prefix: str = "nightly") -> Path:
    """A fresh folder for this machine's next run, e.g. results/xeon-2core/nightly-20261122T031500Z."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = history / environment.machine().slug / f"{prefix}-{stamp}"
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        raise UsageError(f"{folder} exists: another {prefix} of this machine started this second") from None
    return folder


def run_folders(history: Path) -> list[Path]:
    """Every folder holding a results file, in (machine, name) order."""
    return sorted({path.parent for name in records.RESULTS_FILES for path in Path(history).glob(f"*/*/{name}")})


def previous(folder: Path, prefix: str = "nightly") -> Path | None:
    """The latest earlier ``prefix`` run of the same machine, or None for a machine's first."""
    earlier = [
        f
        for f in run_folders(folder.parent.parent)
        if f.parent == folder.parent and f.name.startswith(prefix + "-") and f.name < folder.name
    ]
    return earlier[-1] if earlier else None


def summary(folder: Path) -> dict:
    """One line of ``stanjax history``: what ran, when, at which commit, how much of it was valid. A folder with
    no run this stanjax reads (an empty file, only damaged lines or another schema's records) is a RecordsError
    saying why, so that the listing goes on without it; a damaged file among runs is warned, as by ``read``."""
    runs, measurements, skipped = records.read_all(
        [folder / name for name in records.RESULTS_FILES if (folder / name).exists()]
    )
    if not runs:
        why = "; ".join(s.why for s in skipped) or ("study measurements only" if measurements else "an empty file")
        raise records.RecordsError(f"{folder}: no records ({why})")
    for damaged in skipped:
        warnings.warn(damaged, stacklevel=2)
    commits = sorted({(r.provenance.git_commit or "unknown")[:10] for r in runs})
    return {
        "machine": folder.parent.name,
        "folder": folder.name,
        "created": min(r.created for r in runs),
        "runs": len(runs),
        "valid": sum(r.valid for r in runs),
        "models": len({r.model_id for r in runs}),
        "commits": commits,
    }
