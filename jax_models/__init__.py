"""NumPyro models: ``jax_models/<model>.py`` defines a function named ``<model>`` taking the Stan data block
as keyword arguments (observations default to None, so the same function gives the prior predictive)."""

import importlib.util
import sys
from pathlib import Path


def load(file: Path):
    """The NumPyro model function of a model file (a spec's ``jax_file``), loaded from that file as the module
    ``stanjax.jax_models.<model>``: this folder's and a user's model folder's alike, and a file added since the
    install (``stanjax import``) too. A file changed since it was loaded is loaded again: a notebook's second
    ``sj.check`` of an edited port checks the edit."""
    name = f"{__name__}.{file.stem}"
    module = sys.modules.get(name)
    stat = file.stat()
    stamp = (str(file.resolve()), stat.st_mtime_ns, stat.st_size)
    if module is None or getattr(module, "__stanjax_stamp__", None) != stamp:
        found = importlib.util.spec_from_file_location(name, file)
        assert found is not None and found.loader is not None, file
        module = importlib.util.module_from_spec(found)
        sys.modules[name] = module
        try:
            found.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        module.__stanjax_stamp__ = stamp  # type: ignore[attr-defined]
    return getattr(module, file.stem)
