"""Reference posteriors: long runs summarised per scalar parameter, in generated files under references/.

Each file is ``references/<model id>.<size>.json``; its ``header`` records the exact command, engine, seeds,
batches, versions and data hash that made it. The files are never edited by hand: ``stanjax reference`` rewrites
them.

A reference is made in batches of chains until it is precise enough: batch b runs ``chains`` new chains (sampler
seed stream ``REFERENCE_STREAM + b``) and adds them to the draws so far; it stops when every parameter's MCSE of
the mean and of the sd is at most ``target_mcse`` posterior sds (an sd with an infinite fourth moment excepted, as
the gate excepts it) and R-hat over all chains is at most 1.01, and
refuses (writes nothing) when ``max_batches`` are not enough. The engine is any CPU engine whose runs pass the
gates on the model (the density test proves both sides target the same posterior): Stan by default; the
fastest one for a long model, said in the header.
"""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import numpy as np

from stanjax import models
from stanjax.models import ROOT, ModelSpec, UsageError
from stanjax.runner.core import environment, records
from stanjax.runner.core.config import RunConfig
from stanjax.runner.core.engine_registry import get_engine
from stanjax.runner.measure import diagnose

REFERENCES_DIR = ROOT / "references"
# The sampler seed of a reference is RunConfig.sampler_seed(REFERENCE_STREAM): a stream no benchmark repeat uses.
REFERENCE_STREAM = 2**20
RHAT_MAX = 1.01
# How the gate and the report name a reference that is not ours (inference-gym's ground truth, posteriordb's draws).
OUTSIDE_TRUTH = "outside truth"


def path(model_id: str, size: str, folder: Path = REFERENCES_DIR) -> Path:
    return folder / f"{model_id}.{size}.json"


def load(model_id: str, size: str, folder: Path = REFERENCES_DIR) -> dict | None:
    file = path(model_id, size, folder)
    return json.loads(file.read_text()) if file.exists() else None


def applicable(model_id: str, size: str, resize, data_hash: str | None) -> tuple[dict | None, str]:
    """The reference posterior that applies to a run (same model, size preset, unresized, same data), or None
    and why not: the model's external ground truth where it has one for the size, else ours under references/. The one rule
    for the validity gate, the nightly gold check and the report."""
    if resize:
        return None, "no reference for resized data (a study's grid point)"
    if model_id not in models.registry() or size not in models.get(model_id).sizes:  # never a name from a record
        return None, "no reference: not a model and size preset of this checkout"
    spec = models.get(model_id)
    if spec.reference_twin:  # the same posterior reparameterised: its reference, narrowed to this model's names
        twin, why = applicable(spec.reference_twin, size, resize, data_hash)
        if twin is None:
            return None, f"{why} (of the twin {spec.reference_twin}, whose reference is this model's)"
        return narrowed(twin, spec), f"the twin's {why}"
    external = spec.ground_truth(size) if spec.ground_truth else None
    reference = external or load(model_id, size)
    if not external and (reference is None or reference["header"]["data_hash"] != data_hash):
        # a fixed data set (posteriordb's) is every preset's: a reference made at one preset is every one's
        reference = next(
            (
                other
                for name in models.SIZE_NAMES
                if (other := load(model_id, name)) and other["header"]["data_hash"] == data_hash
            ),
            reference,
        )
    if reference is None:
        return None, "no ground truth or reference for this model and size"
    if reference["header"]["data_hash"] != data_hash:
        return None, "the reference was made for other data (data hash differs)"
    if external:
        return reference, f"{OUTSIDE_TRUTH}: {reference['header']['source']}"
    return reference, (f"references/{model_id}.{reference['header']['size']}.json ({reference['header']['command']})")


def narrowed(twin_reference: dict, spec: ModelSpec) -> dict:
    """A twin's reference as ``spec``'s: the summaries of ``spec``'s judged parameters alone, every one of them
    (a twin that lacks one is a bug in the pair, not a gap to skip)."""
    names = [name for name in twin_reference["parameters"] if name.split("[")[0] in {p.name for p in spec.judged}]
    missing = {p.name for p in spec.judged} - {name.split("[")[0] for name in names}
    if missing:
        raise ValueError(f"{spec.reference_twin}'s reference has no {', '.join(sorted(missing))} for {spec.id}")
    header = twin_reference["header"] | {"twin_of": spec.id}
    return {"header": header, "parameters": {name: twin_reference["parameters"][name] for name in names}}


class NotConverged(RuntimeError):
    """The batches allowed did not reach the target MCSE and R-hat: no reference is written."""


TARGET_MCSE = 0.01  # posterior sds: an ESS of ~10,000 per mean, so a run's combined MCSE grows by < 5 % at ESS 1,000
MAX_BATCHES = 8


def generate(
    spec: ModelSpec,
    config: RunConfig,
    command: str,
    engine_name: str = "stan",
    target_mcse: float = TARGET_MCSE,
    max_batches: int = MAX_BATCHES,
    progress=print,
) -> dict:
    """Sample ``spec`` in batches of ``config.chains`` chains with ``engine_name`` until every parameter's MCSE of
    the mean and of the sd is at most ``target_mcse`` sds and R-hat <= 1.01; the summary with its header. An sd
    whose draws' Pareto k-hat is at least the gate's KHAT_SD_MAX (an infinite fourth moment: its MCSE never
    shrinks as 1 / sqrt(ESS), and the gate does not check it) is left out of the target, and named in the header.
    Raises NotConverged when ``max_batches`` do not reach that (nothing written)."""
    from stanjax.runner.core.engine_registry import entry
    from stanjax.runner.measure.metrics import (  # arviz: imported where a reference is made, not by every command
        parameter_table,
        tail_khats,
    )
    from stanjax.runner.measure.validity import KHAT_SD_MAX

    data = spec.data(config.size, config.data_seed())
    engine = get_engine(engine_name)
    placement = entry(engine_name).placement("cpu", x64=True)
    names = [p.name for p in spec.judged]
    start = time.perf_counter()
    handle = engine.compile(spec, placement)
    batches, seeds, step_sizes, divergences, info = [], [], [], 0, {}
    for batch in range(max_batches):
        seed = config.sampler_seed(REFERENCE_STREAM + batch)
        result = engine.sample(handle, data, config, seed, placement)
        batches.append(result.draws)
        seeds.append(seed)
        step_sizes += list(result.stats.step_size) or [np.nan] * config.chains
        divergences += int(result.stats.divergent.sum())
        info = result.info
        draws = {name: np.concatenate([b[name] for b in batches]) for name in names}  # chains side by side
        table = parameter_table(draws, names, quantiles=True)
        max_rhat = float(np.max([row["rhat"] for row in table.values()]))
        heavy = {name: k for name, k in tail_khats(draws, names).items() if k >= KHAT_SD_MAX}
        worst_mcse = max(
            max(row["mcse_mean"], row["mcse_sd"] if name not in heavy else 0.0) / row["sd"]
            for name, row in table.items()
        )
        progress(
            f"reference: {spec.id} ({config.size}) batch {batch + 1}: {len(batches) * config.chains} chains, "
            f"max R-hat {max_rhat:.4f}, max MCSE {worst_mcse:.4f} sd (target {target_mcse})"
        )
        if max_rhat <= RHAT_MAX and worst_mcse <= target_mcse:
            break
        found = diagnose.chain_findings(draws, step_sizes) if not max_rhat <= RHAT_MAX else []
        for finding in found:
            progress(f"reference: {spec.id} ({config.size}): {finding}")
        if any(finding.hopeless for finding in found):  # more batches would not free a stuck chain: stop now
            raise NotConverged(
                f"{spec.id} ({config.size}): R-hat {max_rhat:.3f} (limit {RHAT_MAX}) after batch "
                f"{batch + 1}: {'; '.join(map(str, found))}. {diagnose.ADVICE} No reference written."
            )
    else:
        raise NotConverged(
            f"{spec.id} ({config.size}): after {max_batches} batches R-hat {max_rhat:.3f} "
            f"(limit {RHAT_MAX}), max MCSE {worst_mcse:.4f} sd (target {target_mcse}): no reference"
        )
    provenance = environment.provenance()
    header = {
        "generated_file": "Made by the command below; do not edit, rerun it instead.",
        "command": command,
        "model_id": spec.id,
        "size": config.size,
        "sizes": spec.size_kwargs(config.size),
        "data_seed": config.data_seed(),
        "data_hash": models.data_hash(data),
        "how": f"{len(batches)} batch(es) of {config.chains} {engine_name} chains ({config.warmup} warmup, "
        f"{config.draws} draws each, sampler seeds below), pooled, until every parameter's MCSE of mean "
        f"and sd <= {target_mcse} posterior sd (the sd where its Pareto k-hat < {KHAT_SD_MAX}) and R-hat <= "
        f"{RHAT_MAX}",
        "engine_name": engine_name,
        "sampler_seeds": seeds,
        "sampler_seed": seeds[0],
        "target_mcse": target_mcse,
        "max_mcse": worst_mcse,
        "config": config.as_dict(),
        "engine": info,
        "versions": provenance.versions,
        "git_commit": provenance.git_commit,
        "git_dirty": provenance.git_dirty,
        "machine": provenance.machine.cpu,
        "created": records.now(),
        "elapsed_s": round(time.perf_counter() - start, 1),
        "max_rhat": max_rhat,
        "min_ess_bulk": min(row["ess_bulk"] for row in table.values()),
        "divergences": divergences,
        # the sds left out of the stopping rule, as the gate leaves them unchecked: an infinite fourth moment
        "sd_not_in_target": {"khat_limit": KHAT_SD_MAX, "parameters": {n: round(k, 3) for n, k in heavy.items()}},
    }
    return {"header": header, "parameters": table}


def write(reference: dict, folder: Path = REFERENCES_DIR) -> Path:
    file = path(reference["header"]["model_id"], reference["header"]["size"], folder)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(".tmp")
    tmp.write_text(json.dumps(reference, indent=1) + "\n")
    tmp.replace(file)
    return file


def element_names(shapes: dict[str, tuple | None]) -> list[str]:
    """Stan's names of the parameters' elements ("beta[2]", "Sigma[1,2]"), as the runs' records and posteriordb
    name them."""
    return [
        name if not shape else f"{name}[{','.join(str(i + 1) for i in index)}]"
        for name, shape in shapes.items()
        for index in np.ndindex(*(shape or ()))
    ]


def read_posteriordb_json(path: Path):
    """A posteriordb JSON file, or the ``.json.zip`` posteriordb ships it as (one .json member)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.namelist() if m.endswith(".json")]
            if len(members) != 1:
                raise UsageError(f"{path}: expected one .json file in the archive, found {len(members)}")
            return json.loads(archive.read(members[0]))
    return json.loads(Path(path).read_text())


def from_posteriordb(path: Path, names: list[str]) -> dict:
    """A reference posterior from posteriordb's reference draws (``reference_posteriors/draws/draws/<posterior>.json``,
    or the ``.json.zip`` posteriordb ships: a list of chains, each {Stan element name: draws}), summarised as this
    suite's references are (mean, sd and their MCSEs per scalar parameter, over its chains) for those of ``names``
    it holds (``without``: those it does not, e.g. a parameter a port reparameterised); the file's other quantities
    are left out (``other``: their names). A file that is not such draws, or holds none of ``names``, is a UsageError."""
    from stanjax.runner.measure.metrics import parameter_table  # arviz: imported where a reference is summarised

    try:
        chains = read_posteriordb_json(path)
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise UsageError(f"{path} is not posteriordb reference draws: {err}") from None
    if not (isinstance(chains, list) and chains and all(isinstance(chain, dict) for chain in chains)):
        raise UsageError(
            f"{path} is not posteriordb reference draws: expected a list of chains, each {{parameter: draws}}"
        )
    held = [name for name in names if all(name in chain for chain in chains)]
    if not held:
        raise UsageError(f"{path} has no draws of {', '.join(names)} (it has {', '.join(chains[0]) or 'none'})")
    _refuse_other_elements(path, names, list(chains[0]))
    try:
        draws = {name: np.array([chain[name] for chain in chains], dtype=np.float64) for name in held}
    except ValueError as err:  # chains of different lengths, or draws that are not numbers
        raise UsageError(f"{path}: the draws do not form chains of numbers of one length: {err}") from None
    table = parameter_table(draws, held)
    return {
        "source": f"posteriordb reference draws {path}",
        "chains": len(chains),
        "draws": draws[held[0]].shape[1],
        "without": [name for name in names if name not in held],
        "other": [name for name in chains[0] if name not in names],  # quantities of the file's own, left out
        "parameters": {
            name: {key: table[name][key] for key in ("mean", "mcse_mean", "sd", "mcse_sd")} for name in held
        },
    }


def _refuse_other_elements(path: Path, names: list[str], drawn: list[str]) -> None:
    """A file whose draws of one of the model's parameters have other elements than the model's (``beta[1..5]``
    against a vector[3] ``beta``) holds another posterior's draws: a UsageError before anything runs, not a
    "different posterior" after the whole check."""

    def elements(listed: list[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for name in listed:
            found.setdefault(name.split("[")[0], set()).add(name)
        return found

    model, file = elements(names), elements(drawn)
    odd = [
        f"{base} ({len(file[base])} in the file, {len(model[base])} in the model)"
        for base in model
        if base in file and file[base] != model[base]
    ]
    if odd:
        raise UsageError(
            f"{path}: its draws of {', '.join(odd)} have other elements than the model's parameters: "
            "the draws of another posterior"
        )
