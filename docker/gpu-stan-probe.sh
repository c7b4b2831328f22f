#!/usr/bin/env bash
# Why bundled Stan's chains die on a borrowed GPU box (every chain a segmentation fault on the H200 of 2026-11-26,
# built with -march=native and x86-64-v3 alike; docs/gpu.md): one device command of about 3 minutes, from the
# checkout's root with `make gpu-carry`'s wheels in .gpu-carry/. It prints what tells the suspects apart: the
# library path and Python's compiler flags (what httpstan builds with there), which libtbb and libstdc++ a model
# module loads, the native backtrace of a chain (cuda-gdb, the machine's only debugger), and whether pystan's
# own build (httpstan's prebuilt NUTS object, no -march) samples there.
# It compiles on the box, so it needs httpstan's whole wheel, which make gpu-carry slims to what sampling carried
# modules needs: fetch it whole again first (python3.12 -m pip download --no-deps --only-binary=:all: --python-version
# 3.12 --platform manylinux2014_x86_64 httpstan==4.17.0 -d .gpu-carry replaces the slimmed one).
set -uo pipefail
site=.gpu-site
[ -d "$site" ] || python3 -m pip install --quiet --no-index --no-deps --target "$site" .gpu-carry/*.whl
export PYTHONPATH="$PWD:$PWD/$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONFAULTHANDLER=1
model=eight_schools-eight_schools_noncentered isa=${1:-x86-64-v3}
echo "== library path: ${LD_LIBRARY_PATH:-unset}"
python3 -c 'import sysconfig as s; print("== compiler:", *(s.get_config_var(v) for v in ("CC", "CXX", "CFLAGS", "LDSHARED")), sep="\n  ")'
gcc --version | head -1; ldconfig -p | grep -i "libtbb\|libstdc++" | sed 's/^/  /'
echo "== compile $model for $isa"
python3 -m stanjax.runner.commands.compile --isa="$isa" "$model" 2>&1 | tail -n 1
module=$(python3 docker/gpu-stan-probe.py --module "$model" "$isa")
echo "== $module"; readelf -d "$module" | grep -i "path\|needed" | sed 's/^/  /'
ldd "$module" | grep -i "tbb\|stdc++" | sed 's/^/  /'
echo "== one chain, natively traced (the debugger follows the forked chain)"
timeout 120 cuda-gdb -q -batch -ex "set follow-fork-mode child" -ex run -ex bt -ex "info sharedlibrary" \
  --args python3 docker/gpu-stan-probe.py "$model" "$isa" 2>&1 | grep -v "^\[New Thread\|^\[Thread .* exited" | tail -n 80
echo "== pystan's own build and sampler (no -march, httpstan's prebuilt NUTS object)"
timeout 150 python3 - <<'PY' 2>&1 | tail -n 5
import stan
code = "parameters { real y; } model { y ~ normal(0, 1); }"
fit = stan.build(code, random_seed=1).sample(num_chains=1, num_samples=200)
print("pystan sampled:", fit["y"].shape)
PY
