"""Reference posteriors: long Stan runs summarised per scalar parameter, in generated files under references/.

Each file is ``references/<model id>.<size>.json``; its ``header`` records the exact command, seeds, engine,
versions and data hash that made it. The files are never edited by hand: ``stanjax reference`` rewrites them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import models
from models import ROOT, ModelSpec
from runner import records
from runner.config import RunConfig
from runner.engines import get_engine

REFERENCES_DIR = ROOT / "references"
# The sampler seed of a reference is RunConfig.sampler_seed(REFERENCE_STREAM): a stream no benchmark repeat uses.
REFERENCE_STREAM = 2**20
RHAT_MAX = 1.01


def path(model_id: str, size: str, folder: Path = REFERENCES_DIR) -> Path:
    return folder / f"{model_id}.{size}.json"


def load(model_id: str, size: str, folder: Path = REFERENCES_DIR) -> dict | None:
    file = path(model_id, size, folder)
    return json.loads(file.read_text()) if file.exists() else None


def applicable(model_id: str, size: str, resize, data_hash: str | None) -> tuple[dict | None, str]:
    """The reference posterior that applies to a run (same model, size preset, unresized, same data), or None
    and why not: the model's external ground truth where it has one, else ours under references/. The one rule
    for the validity gate, the nightly gold check and the report."""
    if resize:
        return None, "no reference for resized data (a study's grid point)"
    if model_id not in models.registry() or size not in models.SIZE_NAMES:  # never a file name from a record
        return None, "no reference: not a model and size preset of this checkout"
    spec = models.get(model_id)
    reference = spec.ground_truth(size) if spec.ground_truth else load(model_id, size)
    if reference is None:
        return None, f"no {'ground truth' if spec.ground_truth else 'reference'} for this model and size"
    if reference["header"]["data_hash"] != data_hash:
        return None, "the reference was made for other data (data hash differs)"
    if spec.ground_truth:
        return reference, reference["header"]["source"]
    return reference, f"references/{model_id}.{size}.json ({reference['header']['command']})"


def generate(spec: ModelSpec, config: RunConfig, command: str) -> dict:
    """Run the Stan engine long and summarise every scalar parameter; refuses an unconverged reference."""
    from runner.metrics import parameter_table  # arviz: imported where a reference is made, not by every command

    data = spec.data(config.size, config.data_seed())
    engine = get_engine("stan")
    start = time.perf_counter()
    result = engine.sample(engine.compile(spec), data, config, config.sampler_seed(REFERENCE_STREAM))
    table = parameter_table(result.draws, [p.name for p in spec.parameters], quantiles=True)
    max_rhat = float(np.max([row["rhat"] for row in table.values()]))
    if not max_rhat <= RHAT_MAX:
        raise RuntimeError(f"{spec.id} ({config.size}): reference run has R-hat {max_rhat:.3f} > {RHAT_MAX}")
    provenance = records.provenance()
    header = {
        "generated_file": "Made by the command below; do not edit, rerun it instead.",
        "command": command,
        "model_id": spec.id,
        "size": config.size,
        "sizes": spec.size_kwargs(config.size),
        "data_seed": config.data_seed(),
        "data_hash": models.data_hash(data),
        "sampler_seed": config.sampler_seed(REFERENCE_STREAM),
        "config": config.as_dict(),
        "engine": result.info,
        "versions": provenance.versions,
        "git_commit": provenance.git_commit,
        "git_dirty": provenance.git_dirty,
        "machine": provenance.machine.cpu,
        "created": records.now(),
        "elapsed_s": round(time.perf_counter() - start, 1),
        "max_rhat": max_rhat,
        "min_ess_bulk": min(row["ess_bulk"] for row in table.values()),
        "divergences": int(result.stats.divergent.sum()),
    }
    return {"header": header, "parameters": table}


def write(reference: dict, folder: Path = REFERENCES_DIR) -> Path:
    file = path(reference["header"]["model_id"], reference["header"]["size"], folder)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(".tmp")
    tmp.write_text(json.dumps(reference, indent=1) + "\n")
    tmp.replace(file)
    return file
