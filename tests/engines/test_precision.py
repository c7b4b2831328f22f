"""float32 means float32 in every matmul: JAX's GPU default (TF32 on Ampere and later) broke NUTS on an H100, so
the JAX engines ask for full precision. Proven on the compiled program, not assumed from the setting: every
``dot_general`` of a float32 log density and its gradient, as the engines build them, carries HIGHEST."""

import json
import subprocess
import sys

import pytest

from stanjax.models import ROOT

PROGRAM = """
import json, re, sys
from stanjax import jax_models, models
from stanjax.runner.core.config import Placement
from stanjax.runner.engines.jax_setup import start_jax

jax = start_jax(Placement("cpu", "float32", "vectorized"), 4)
if sys.argv[1] == "planted":  # the fault: JAX's default matmul precision (TF32 on a recent GPU)
    jax.config.update("jax_default_matmul_precision", None)
from numpyro.infer.util import initialize_model

spec = models.get("covtype_synth-logistic_regression")
init, potential_fn, *_ = initialize_model(jax.random.PRNGKey(0), jax_models.load(spec.jax_file),
                                          model_kwargs=spec.data("tiny", 1), dynamic_args=False)
text = jax.jit(jax.value_and_grad(potential_fn)).lower(init.z).as_text()
print(json.dumps({"dtype": str(init.z["beta"].dtype),
                  "precisions": re.findall(r"stablehlo.dot_general .*?precision = \\[(\\w+), (\\w+)\\]", text)}))
"""


def matmul_precisions(planted: bool) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, "planted" if planted else "engines"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def full_float32(found: dict) -> bool:
    return (
        found["dtype"] == "float32"
        and bool(found["precisions"])
        and all(pair == ["HIGHEST", "HIGHEST"] for pair in found["precisions"])
    )


@pytest.mark.parametrize("planted", [False, True], ids=["engines", "planted-default-precision"])
def test_a_float32_run_computes_its_matmuls_at_full_float32_precision(planted):
    found = matmul_precisions(planted)
    assert len(found["precisions"]) >= 2  # X @ beta, and its transpose in the gradient
    assert full_float32(found) != planted, found
