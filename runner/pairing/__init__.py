"""Two programs of one posterior: proven to share a density, run side by side and compared (``stanjax check``),
and posteriordb's posteriors brought in as such pairs (``stanjax import``)."""
