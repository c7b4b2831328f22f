#!/usr/bin/env bash
# `make docker-test`: build the CPU image and run the tiny suite in it; passes when /out/index.html appears.
# Usage: docker/test.sh [cpu|cuda]...   (default: cpu; `make docker-test CUDA=1` is `cpu cuda`)
#   cpu   image $IMAGE (default stanjax): the tiny suite (two models) and its report.
#   cuda  image $IMAGE-cuda, built with DEVICE=cuda (CUDA 12 wheels; no GPU needed to build), run without
#         --gpus (so no GPU in the container, on any host): `stanjax run --device gpu` must exit 2 with exactly
#         one line on stderr (JAX sees no GPU; refusing to fall back to the CPU), then the same tiny suite and
#         report as the CPU image, on the CPU. Report in out/docker-test-cuda.
# Starts Debian's docker daemon when none answers (installing docker.io as root if needed), and builds a local
# stand-in for the base image when it cannot be pulled (docker/standin-base.sh). One build at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-stanjax}
devices=("$@")
[ ${#devices[@]} -gt 0 ] || devices=(cpu)
for device in "${devices[@]}"; do
  case "$device" in cpu|cuda) ;; *) echo "docker-test: unknown device '$device' (cpu or cuda)" >&2; exit 2 ;; esac
done
if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || { apt-get update -qq && apt-get install -y -qq docker.io >/dev/null; }
  nohup dockerd >/tmp/stanjax-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "docker-test: no docker daemon (see /tmp/stanjax-dockerd.log)" >&2; exit 2; }
fi
base=$(sed -n 's/^ARG PYTHON_IMAGE=//p' Dockerfile)
docker image inspect "$base" >/dev/null 2>&1 || docker pull "$base" 2>/dev/null || docker/standin-base.sh "$base"

# The tiny suite (two models) in image $1, report into out/$2; passes when index.html appears.
tiny_suite() {
  local tag=$1 out=out/$2 start
  rm -rf "$out" && mkdir -p "$out" && chmod a+w "$out"
  start=$(date +%s)
  docker run --rm -v "$PWD/$out:/out" "$tag" --suite tiny \
    --models eight_schools-eight_schools_noncentered covtype_synth-logistic_regression
  echo "docker-test: tiny suite and report in $(( $(date +%s) - start )) s ($tag)"
  test -s "$out/index.html" || { echo "docker-test: FAILED, no $out/index.html ($tag)" >&2; exit 1; }
  grep -o 'Stan [0-9.]* via [a-z]*' "$out/index.html" | head -n 1
}

# `--device gpu` where JAX sees no GPU: exit 2 and exactly one line on stderr, the runner's refusal.
no_gpu_refusal() {
  local tag=$1 err status=0 lines
  err=$(mktemp)
  docker run --rm "$tag" run --suite tiny --device gpu --out /tmp/results >/dev/null 2>"$err" || status=$?
  lines=$(wc -l <"$err")
  echo "docker-test: --device gpu without a GPU: exit $status, $lines line(s) on stderr:"
  sed 's/^/  /' "$err"
  if [ "$status" != 2 ] || [ "$lines" != 1 ] || ! grep -q 'JAX sees no GPU on this machine.*refusing to fall back' "$err"; then
    rm -f "$err"
    echo "docker-test: FAILED, expected exit 2 and one line 'JAX sees no GPU on this machine ... refusing to fall back'" >&2
    exit 1
  fi
  rm -f "$err"
}

for device in "${devices[@]}"; do
  tag=$image; [ "$device" = cpu ] || tag=$image-$device
  start=$(date +%s)
  docker build -t "$tag" --build-arg DEVICE="$device" --build-arg GIT_COMMIT="$(git rev-parse HEAD)" \
    --build-arg GIT_DIRTY="$(git status --porcelain --untracked-files=no | head -c 1)" .
  echo "docker-test: image $tag built in $(( $(date +%s) - start )) s"
  if [ "$device" = cuda ]; then
    docker run --rm --entrypoint python "$tag" -c \
      'from importlib.metadata import version as v; print("docker-test: jax", v("jax"), "jaxlib", v("jaxlib"), "jax-cuda12-plugin", v("jax-cuda12-plugin"), "cudnn", v("nvidia-cudnn-cu12"))'
    no_gpu_refusal "$tag"
  fi
  tiny_suite "$tag" "docker-test$([ "$device" = cpu ] || echo "-$device")"
  size=$(docker image inspect -f '{{.Size}}' "$tag")
  echo "docker-test: passed ($device); image $tag is $(( size / 1000000 )) MB"
done
