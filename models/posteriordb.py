"""Posteriors carried from posteriordb (github.com/stan-dev/posteriordb, BSD 3-Clause; ``models/posteriordb/SOURCE.md``):
each model's data set and, where posteriordb has one, its reference posterior as an outside truth.

``stanjax import`` writes them (:mod:`stanjax.runner.pairing.importer`); a spec file reads them through this module, which needs
only NumPy. A carried data file is ``{"source": ..., "data": {Stan data entries}}``: posteriordb's data as
published, less the entries the program does not declare, each typed as its declaration (reals as JSON floats), so
they load as the generators' data do (ints int64, reals float64). A carried reference is ``{"header": {"source": ...,
"command": ...}, "parameters": {element: {mean, mcse_mean, sd, mcse_sd}}}``, summarised from posteriordb's
reference draws (10 chains of 1000 thinned draws of a long rstan run) as :func:`stanjax.runner.measure.references.from_posteriordb`
summarises them; the gate compares runs with it as with inference-gym's ground truths (:mod:`stanjax.models.gym`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from stanjax.models import SIZE_NAMES, data_hash

# posteriordb's data sets are fixed: every size preset is the one data set (a model with sizes {} has one).
SIZES: dict[str, dict[str, int]] = {size: {} for size in SIZE_NAMES}


@cache
def _carried(path: Path) -> dict:
    return json.loads(path.read_text())


def fixed_data(path: Path, entries: tuple[str, ...] | None = None) -> Callable[..., dict]:
    """A spec's ``generate`` for a carried data file: the data set itself, whatever the seed; with ``entries``, those
    of its entries alone (a data set several programs read holds what any of them declares)."""

    def generate(seed: int) -> dict:
        return {
            key: np.asarray(value) if isinstance(value, list) else value
            for key, value in _carried(path)["data"].items()
            if entries is None or key in entries
        }

    generate.__doc__ = f"posteriordb's data set {path.name} (fixed: the seed is unused)."
    return generate


def outside_truth(path: Path, model_id: str, generate: Callable[..., dict]) -> Callable[[str], dict]:
    """A spec's ``ground_truth``: the carried reference for every size preset, for the data ``generate`` gives
    (their hash in the header, so the gate applies it only to runs on those data)."""

    def truth(size: str) -> dict:
        carried = _carried(path)
        header = {**carried["header"], "model_id": model_id, "size": size, "data_hash": data_hash(generate(0))}
        return {"header": header, "parameters": carried["parameters"]}

    return truth


def carried(spec) -> bool:
    """Whether a model is a posteriordb posterior (its program's header, as ``stanjax import`` writes it, names
    posteriordb): the per-gradient survey's models."""
    return spec.stan_file.read_text().startswith("// posteriordb's program")
