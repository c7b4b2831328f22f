"""Data and ground truth from the installed ``inference-gym`` package (Apache-2.0, by the TensorFlow Probability
authors), read at run time and never copied into this repository.

The package's targets and its ``internal/data.py`` import TensorFlow; the modules that hold the data
(``inference_gym/internal/datasets/*.py``) and the ground truths (``inference_gym/targets/ground_truth/*.py``, made
by the authors' long Stan runs) import only NumPy, so they are loaded by file path, without the package's
``targets`` package. A ground truth gives, per quantity, the posterior mean, the standard error of that mean and
the posterior sd; it gives no standard error of the sd (``mcse_sd`` None), so the gate scales the mean's standard
error as the run's own MCSEs scale (:func:`stanjax.runner.measure.validity.with_sd_errors`): the normal-theory se_mean / sqrt(2)
would understate it for a heavy-tailed quantity.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np

DISTRIBUTION = "inference-gym"


def package_dir() -> Path:
    """The installed ``inference_gym`` package's folder (located, not imported)."""
    found = importlib.util.find_spec("inference_gym")
    if found is None or found.origin is None:
        raise ModuleNotFoundError("inference-gym is not installed (it is in requirements.lock: run `make install`)")
    return Path(found.origin).parent


@cache
def module(relative: str) -> ModuleType:
    """A NumPy-only module of the package by its path inside it (``internal/datasets/sp500_closing_prices.py``)."""
    path = package_dir() / relative
    spec = importlib.util.spec_from_file_location(f"stanjax_gym.{path.stem}", path)
    # None only for a suffix no loader takes; every caller names a .py file.
    assert spec is not None and spec.loader is not None, f"{path}: not a Python file"
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def dataset(name: str) -> ModuleType:
    """``inference_gym/internal/datasets/<name>.py``."""
    return module(f"internal/datasets/{name}.py")


def ground_truth(target: str, quantities: dict[str, str], model_id: str, size: str, data: dict) -> dict:
    """A reference (the shape of ``references/*.json``) from ``inference_gym/targets/ground_truth/<target>.py``,
    for the run data ``data`` (its hash in the header: the gate applies it only to runs on those data).

    ``quantities``: our parameter name -> the target's quantity under its identity transformation (``avg_effect``
    for ``IDENTITY_AVG_EFFECT_MEAN`` ..., ``""`` for a target whose one quantity is unnamed: ``IDENTITY_MEAN``).
    Multi-dimensional quantities get our 1-based names (``theta[3]``)."""
    from stanjax.models import data_hash

    relative = f"targets/ground_truth/{target}.py"
    truth = module(relative)
    parameters = {}
    for name, quantity in quantities.items():
        prefix = f"IDENTITY_{quantity.upper()}" if quantity else "IDENTITY"  # a target of one quantity: unnamed
        mean, se, sd = (
            np.asarray(getattr(truth, f"{prefix}_{column}"))
            for column in ("MEAN", "MEAN_STANDARD_ERROR", "STANDARD_DEVIATION")
        )
        for index in np.ndindex(mean.shape):
            flat = f"{name}[{','.join(str(i + 1) for i in index)}]" if index else name
            parameters[flat] = {
                "mean": float(mean[index]),
                "mcse_mean": float(se[index]),
                "sd": float(sd[index]),
                "mcse_sd": None,
            }
    version = importlib.metadata.version(DISTRIBUTION)
    header = {
        "source": f"inference-gym {version} ground truth (inference_gym/{relative})",
        "model_id": model_id,
        "size": size,
        "data_hash": data_hash(data),
        "mcse_sd": "not in the ground truth: the gate scales mcse_mean by the run's mcse_sd / mcse_mean",
    }
    return {"header": header, "parameters": parameters}
