"""A fixed 1-D target without data: rlouf's 2020 four-component Gaussian mixture (1e9 RWMH samples in 25 s)."""

from stanjax.models import ModelSpec, Parameter


def generate(seed: int) -> dict:
    """No data: the target density is fixed in the program (the seed is unused)."""
    return {}


SPEC = ModelSpec(
    id="fixed-gaussian_mixture_target",
    title="rlouf's 1-D mixture target",
    description="Density of a fixed mixture: locations -2, 0, 3.2, 2.5; scales 1.2, 1, 5, 2.8; "
    "weights 0.2, 0.3, 0.1, 0.4.",
    regime="per-draw overhead: a gradient costs nanoseconds, so sampler and framework overhead dominate",
    parameters=(Parameter("x"),),
    sizes={size: {} for size in ("tiny", "small", "default", "large")},
    generate=generate,
)
