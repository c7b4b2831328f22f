"""The Stan User's Guide's multilevel 2PL item-response model, centred as the guide writes it, on sparse answers
(``models/irt_sparse.py``): Carpenter's ~1000-parameter IRT-2PL, the posterior his flows fitted and NUTS did not.

Its reference is its non-centred twin's (``reference_twin``): the same posterior, reparameterised so that NUTS
fits it, drawn long; the twin's transformed parameters carry this model's names. The discriminations are declared
by their logs (``log_gamma ~ normal(0, sigma_gamma)``: the guide's ``gamma ~ lognormal(0, sigma_gamma)`` on the
log scale Stan's ``lower=0`` transform samples it on, so the same sampler geometry): a question with few answers
that its students' abilities separate leaves gamma unbounded by the data, and its draws' tails so heavy
(Pareto k-hat up to 0.41 at tiny) that neither its sd nor at default its mean has an MCSE to gate by.

What NUTS does here (NumPyro, 4 chains x 1000 + 1000, data seed 1, one run each, 2026-11-26): at default size the
centred form reached R-hat 1.40 on sigma_gamma with a bulk ESS of 14 and no divergence at all (the chains stay
where they entered the funnel: no warning but R-hat), 1.27 at target acceptance 0.95 on 100 x 200 x 10, 1.24 on
tiny; the twin at 0.95 on the same data: R-hat 1.013, 1.010, 1.006. Both run at target acceptance 0.95, the twin's
(at 0.8 it diverged 79 times at default), so that a Stan user's first answer to a hard posterior is taken on both.
"""

from stanjax.models import ModelSpec, Parameter, irt_sparse

SPEC = ModelSpec(
    id="irt_sparse_synth-irt_2pl_centred",
    title="IRT 2PL, centred, sparse",
    description="The Stan User's Guide's multilevel 2PL, centred: each student answers a few questions, each "
    "question has ~5 answers; its non-centred twin's reference.",
    regime="funnels: centred item hierarchies on ~5 answers a question, ~1000 parameters at default (Carpenter)",
    parameters=(
        Parameter("mu_beta"),
        Parameter("alpha", ("J",)),
        Parameter("beta", ("K",)),
        Parameter("log_gamma", ("K",)),
        Parameter("sigma_beta"),
        Parameter("sigma_gamma"),
    ),
    sizes=irt_sparse.SIZES,
    generate=irt_sparse.generate,
    n_key="N",
    claims=("carpenter",),
    reference_twin="irt_sparse_synth-irt_2pl_noncentred",
    target_accept=0.95,
    expected_to_fail="centred item hierarchies on 5-10 answers a question: the chains stick in the funnels of "
    "sigma_beta and sigma_gamma (Carpenter)",
)
