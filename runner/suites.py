"""Named suites: which models, engines and settings a campaign runs unless the command line says otherwise."""

from runner.engines import ENGINE_NAMES

QUICK_MODELS = ["eight_schools-eight_schools_noncentered", "covtype_synth-logistic_regression",
                "tennis_synth-bradley_terry_hierarchical"]

SUITES = {
    # The README's `make report`: the first three models at their small size, Stan and NumPyro on CPU,
    # 3 repeats; a few minutes on 2 cores.
    "quick": {"models": QUICK_MODELS, "engines": ENGINE_NAMES, "size": "small",
              "chains": 4, "warmup": 1000, "draws": 1000, "repeats": 3},
    # The real comparison: default sizes (e.g. logistic regression on 10k x 54), 3 repeats.
    "default": {"models": "all", "engines": ENGINE_NAMES, "size": "default",
                "chains": 4, "warmup": 1000, "draws": 1000, "repeats": 3},
    # Smoke test used by the test suite: tiny data, one repeat, enough draws for R-hat <= 1.01 most of the time.
    "tiny": {"models": "all", "engines": ENGINE_NAMES, "size": "tiny",
             "chains": 4, "warmup": 500, "draws": 1000, "repeats": 1},
}
