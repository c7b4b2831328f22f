#!/usr/bin/env bash
# A local BridgeStan against the Stan library the bundled Stan ships, for the nutpie_stan engine: PyPI's bridgestan
# is only the Python side (it downloads its C++ sources from GitHub, unreachable here), so BridgeStan's sources (its
# makefile and src/, brought by the library's `fetch` of github:roualdes/bridgestan, whose stan/ submodule is absent)
# are built against httpstan's copy of Stan, Stan Math, Eigen, Boost, SUNDIALS, TBB and stanc 2.39, with the stand-ins
# for Stan Math's make files that benchmarks/stan_math_make_from_httpstan.sh writes (as for the local CmdStan).
# Nothing is compiled for the engine here: it builds each program, and the bridge object of each instruction set,
# with its own flags (runner/engines/nutpie_stan.py). The last step builds BridgeStan's bernoulli test model and
# evaluates its log density's gradient through bridgestan.StanModel. Never committed: the folder lives outside the
# checkout (BRIDGESTAN=... for stanjax).
#
#   benchmarks/bridgestan_from_httpstan.sh BRIDGESTAN_SNAPSHOT_GIT_DIR OUT_DIR
#   e.g. benchmarks/bridgestan_from_httpstan.sh /work/.mirror/roualdes+bridgestan/repo /work/bridgestan
set -euo pipefail
snapshot=${1:?the git directory of a BridgeStan snapshot}
out=${2:?the folder to assemble BridgeStan in}
python=$(realpath -s "${PYTHON:-.venv/bin/python}")  # absolute, for after the cd; still the venv's
here=$(cd "$(dirname "$0")" && pwd)
httpstan=$("$python" -c 'import httpstan, pathlib; print(pathlib.Path(httpstan.__file__).parent)')

mkdir -p "$out"
git --git-dir="$snapshot" archive HEAD | tar -x -C "$out"
cd "$out"
rm -rf stan bin && mkdir -p stan/src bin
ln -s "$httpstan/include/stan" stan/src/stan
"$here/stan_math_make_from_httpstan.sh" "$httpstan" stan/lib/stan_math/make
cp "$httpstan/stanc" bin/stanc

# The check: BridgeStan's own test model, threaded as nutpie needs it, through the Python side.
make STAN_THREADS=true test_models/bernoulli/bernoulli_model.so
"$python" - <<'EOF'
import bridgestan
import numpy as np

model = bridgestan.StanModel("test_models/bernoulli/bernoulli_model.so", "test_models/bernoulli/bernoulli.data.json")
assert ".".join(map(str, model.model_version())) == bridgestan.__version__, (model.model_version(), bridgestan.__version__)
density, gradient = model.log_density_gradient(np.array([0.0]))
assert np.isfinite(density) and gradient.shape == (1,), (density, gradient)
stan = next(line for line in model.model_info().splitlines() if line.startswith("Stan version"))
print(f"BridgeStan {bridgestan.__version__}, {stan}: bernoulli's log density {density:.4f}, gradient {gradient[0]:.4f}")
EOF
