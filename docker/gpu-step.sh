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
mkdir -p out/gpu-campaign
if [ -d gpu-campaign ]; then cp -n gpu-campaign/* out/gpu-campaign/ 2>/dev/null || true; fi
status=0
python3 -m stanjax.runner.cli campaign gpu --out out/gpu-campaign "$@" || status=$?
newest=$(ls out/gpu-campaign/archives 2>/dev/null | sed -n 's/^step-\([0-9][0-9]\).*/\1/p' | sort | tail -n 1)
if [ -n "$newest" ] && [ -n "${OUT:-}" ]; then cp out/gpu-campaign/archives/step-"$newest"*.tar.gz "$OUT"/; fi
exit "$status"
