"""The non-centred twin of ``irt_sparse_synth-irt_2pl_centred``: the same posterior, with each question's
difficulty and log discrimination sampled in units of their scales (``beta = sigma_beta * beta_raw``,
``log_gamma = sigma_gamma * gamma_raw``), which takes the funnels away where the data say little about each
question. Its long runs give the reference of both (its transformed parameters carry the centred model's names).

Target acceptance 0.95 (NumPyro, 4 x 1000 + 1000, data seed 1, default size: 79 divergences and R-hat 1.039 at
0.8; 2 and 1.013 at 0.95; 0 and 1.010 at 0.99); 2,000 draws at tiny, where the tiny suite's 1,000 left bulk ESS
near the gate's 400 (461 on sigma_gamma), and at default, where 1,000 left 1 of 6 runs valid (R-hat 1.008-1.023,
bulk ESS under 400: campaign 20261126T172811-dde699 on epyc-2core).
"""

from stanjax.models import ModelSpec, Parameter, irt_sparse

SPEC = ModelSpec(
    id="irt_sparse_synth-irt_2pl_noncentred",
    title="IRT 2PL, non-centred, sparse",
    description="The Stan User's Guide's multilevel 2PL, non-centred, on the centred model's sparse answers: the "
    "reference of both.",
    regime="the centred IRT-2PL's posterior without its funnels: ~1000 parameters at default",
    parameters=(
        Parameter("mu_beta"),
        Parameter("alpha", ("J",)),
        Parameter("beta_raw", ("K",)),
        Parameter("gamma_raw", ("K",)),
        Parameter("sigma_beta"),
        Parameter("sigma_gamma"),
    ),
    quantities=(Parameter("beta", ("K",)), Parameter("log_gamma", ("K",))),
    sizes=irt_sparse.SIZES,
    generate=irt_sparse.generate,
    n_key="N",
    target_accept=0.95,
    min_draws={"tiny": 2000, "default": 2000},
)
