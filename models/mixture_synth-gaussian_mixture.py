"""Marginalised 4-component Gaussian mixture, a labelled few identifying the components: the data-driven
counterpart of rlouf's fixed mixture target.

The data come from four well-separated components (rlouf's weights, locations spread apart); one observation in 20
more comes with its component's label (a hand-labelled sample, as in semi-supervised clustering). The unlabelled
observations' labels are summed out (N x K log-sum-exp terms per gradient, the regime); the labelled ones tie each
component to its own cluster, which is what identifies it.

Why the labels: without them (ordered locations, the usual identification) the posterior had local modes that
random starts fell into, and R-hat failed at N = 2000 in 7 of 8 runs on both engines (records in
results/xeon-2core/full-small-*: max R-hat 1.012-2.37, min bulk ESS 5-519). In 16 NumPyro chains (1000 warmup) 2 stopped
in modes where one component widened to sigma ~ 3 over two clusters while two others shared one; a shared scale left
3 of 16 in such modes, a tight scale prior (lognormal(0, 0.25)) 10 of 16. With the labelled twentieth, 16 of 16
chains agreed at N = 500 and 2000 (R-hat <= 1.008, min bulk ESS >= 1525 of 3200-4800 draws), with 8-11 leapfrog
steps per draw instead of 27. The labels order the components, so the locations need no ordering constraint.

Why the locations are sampled from the labelled centres (``mu_offset = mu - labelled_centre``, a shift: the same
posterior, ``mu`` reported as a quantity): at N = 20,000 the labels no longer kept every chain out of a local mode
when the locations started where both engines start every parameter, uniform(-2, 2) on the unconstrained scale,
i.e. every location near 0. In the first three 8-chain NumPyro batches of the default-size reference at least one
chain stayed in such a mode (R-hat 1.29-1.39); one chain of 8 (sampler seed 108962312) kept ``mu`` at (0.46,
-0.93, -3.75, 6.94) against the others' (-5.01, -1.02, 2.96, 6.98): one wide component (sigma 3.7) over two
clusters, another on the wrong cluster, where 20,000 unlabelled observations make the walls too high to leave.
Measured from the centres, every chain starts within 2 of its own cluster's labelled mean.
rlouf's own components overlap (locations 2.5 and 3.2, scales 2.8 and 5): fitted to draws of that mixture, the
posterior is multimodal (which overlapping component is the wide one), so the data keep separated components.
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError

LOCATIONS = (-5.0, -1.0, 3.0, 7.0)
SCALES = (1.0, 1.2, 0.8, 1.5)
WEIGHTS = (0.2, 0.3, 0.1, 0.4)
LABELLED_ONE_IN = 20  # one labelled observation per this many unlabelled ones


def generate(seed: int, N: int) -> dict:
    """N unlabelled and N // 20 labelled draws from the data mixture; the model fits K = 4 components to them."""
    if N < LABELLED_ONE_IN:
        raise SizeError(f"mixture_synth needs N >= {LABELLED_ONE_IN}, got N={N}")
    rng = np.random.default_rng(seed)
    n_labelled = N // LABELLED_ONE_IN
    component = rng.choice(len(WEIGHTS), size=N + n_labelled, p=WEIGHTS)
    y = rng.normal(np.take(LOCATIONS, component), np.take(SCALES, component))
    labelled = component[N:]
    centre = [np.mean(y[N:][labelled == k]) if np.any(labelled == k) else 0.0 for k in range(len(WEIGHTS))]
    return {
        "N": N,
        "K": len(WEIGHTS),
        "y": y[:N],
        "N_labelled": n_labelled,
        "y_labelled": y[N:],
        "z_labelled": labelled.astype(np.int64) + 1,
        "labelled_centre": np.asarray(centre),
    }


SPEC = ModelSpec(
    id="mixture_synth-gaussian_mixture",
    title="Gaussian mixture",
    description="Gaussian mixture with the component labels summed out; a labelled twentieth of the data "
    "identifies the components (locations sampled from their labelled centres).",
    regime="marginalised discrete latents: N x K log-sum-exp terms per gradient",
    parameters=(Parameter("w", ("K",)), Parameter("mu_offset", ("K",)), Parameter("sigma", ("K",))),
    quantities=(Parameter("mu", ("K",)),),
    sizes={"tiny": {"N": 500}, "small": {"N": 2_000}, "default": {"N": 20_000}, "large": {"N": 1_000_000}},
    generate=generate,
    n_key="N",
    different_transforms=("w",),  # simplex: Stan >= 2.36 maps it through an isometric log ratio, NumPyro stick-breaks
)
