"""Where the project keeps caches (compiled models, JAX's persistent compilation cache)."""

import os
from pathlib import Path

from models import ROOT


def cache_dir() -> Path:
    """``$STANJAX_CACHE`` or ``<checkout>/.cache`` (ignored by git)."""
    path = Path(os.environ.get("STANJAX_CACHE", ROOT / ".cache"))
    path.mkdir(parents=True, exist_ok=True)
    return path
