"""One adapter per sampler (Stan's front ends, NumPyro, BlackJAX, the approximations), each answering the two calls
of :mod:`stanjax.runner.core.engine_registry`, which says what each engine is and imports it only when a run needs
it (a Stan run never imports JAX)."""
