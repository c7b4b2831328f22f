"""NumPyro models: ``jax_models/<model>.py`` defines a function named ``<model>`` taking the Stan data block
as keyword arguments (observations default to None, so the same function gives the prior predictive)."""

import importlib


def load(model_name: str):
    """The NumPyro model function for a model name (the part of a posterior ID after the hyphen)."""
    return getattr(importlib.import_module(f"stanjax.jax_models.{model_name}"), model_name)
