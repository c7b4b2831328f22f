#!/usr/bin/env bash
# One step of `stanjax campaign gpu` on a borrowed GPU box whose image has Python 3.12 and JAX with CUDA but no
# internet (README: "On a borrowed GPU"). From the checkout's root, with the wheels of `make gpu-carry` in
# .gpu-carry/ and the earlier steps' unpacked archives (if any) in gpu-campaign/. Options go to the campaign
# (the same every step, e.g. --budget 25m). The step's archives are copied to $OUT (the device tool's folder).
set -euo pipefail
# The image's python3 may itself be a venv (JAX lives there), so the locked packages it lacks go into a folder of
# their own ahead of it on PYTHONPATH, which the runs' worker processes inherit.
site=.gpu-site
if [ ! -d "$site" ]; then
  python3 -m pip install --quiet --no-index --no-deps --target "$site" .gpu-carry/*.whl
fi
export PYTHONPATH="$PWD:$PWD/$site${PYTHONPATH:+:$PYTHONPATH}"
# Bundled Stan's modules built on the project's machine (`make gpu-stan`), filed in this box's httpstan cache under
# the names its worker interpreter computes: programs the box compiled itself died there (docs/gpu.md). Their
# libtbb is found through the cache's services folder when the cache is where they were built, else through
# LD_LIBRARY_PATH, which the campaign's workers inherit.
if [ -f .gpu-stan/index.json ]; then
  worker_python=$(python3 -c 'import sys; print(sys.prefix)')/bin/python
  "$worker_python" docker/gpu-stan-carried.py install
  cache=$("$worker_python" -c 'import httpstan.cache; print(httpstan.cache.cache_directory())')
  if [ "$cache" != "$(cat .gpu-stan/cache-directory)" ]; then
    export LD_LIBRARY_PATH="$PWD/$site/httpstan/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi
mkdir -p out/gpu-campaign
if [ -d gpu-campaign ]; then cp -n gpu-campaign/* out/gpu-campaign/ 2>/dev/null || true; fi
status=0
python3 -m stanjax.runner.commands.cli campaign gpu --out out/gpu-campaign "$@" || status=$?
newest=$(ls out/gpu-campaign/archives 2>/dev/null | sed -n 's/^step-\([0-9][0-9]\).*/\1/p' | sort | tail -n 1)
if [ -n "$newest" ] && [ -n "${OUT:-}" ]; then cp out/gpu-campaign/archives/step-"$newest"*.tar.gz "$OUT"/; fi
exit "$status"
