"""Where the project keeps caches (compiled models, JAX's persistent compilation cache)."""

import os
from pathlib import Path

from models import ROOT, UsageError


def cache_dir() -> Path:
    """``$STANJAX_CACHE`` or ``<checkout>/.cache`` (ignored by git); a UsageError if it cannot be created."""
    path = Path(os.environ.get("STANJAX_CACHE", ROOT / ".cache"))
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(13, "not writable")
    except OSError as err:
        raise UsageError(f"cannot use the cache folder {path} (STANJAX_CACHE): {err.strerror}") from None
    return path
