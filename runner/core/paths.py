"""Where the project keeps caches (compiled models, JAX's persistent compilation cache)."""

import os
from pathlib import Path

from stanjax.models import ROOT, UsageError


def cache_dir() -> Path:
    """``$STANJAX_CACHE``, else ``<checkout>/.cache`` (ignored by git) in a checkout, else the user's cache folder
    (``$XDG_CACHE_HOME/stanjax``, ``~/.cache/stanjax``) for an installed stanjax, whose own folder may not be
    writable; a UsageError if it cannot be created."""
    default = (
        ROOT / ".cache"
        if (ROOT / "pyproject.toml").is_file()
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stanjax"
    )
    path = Path(os.environ.get("STANJAX_CACHE", default))
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(13, "not writable")
    except OSError as err:
        raise UsageError(f"cannot use the cache folder {path} (STANJAX_CACHE): {err.strerror}") from None
    return path
