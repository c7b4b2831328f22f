#!/usr/bin/env bash
# `make docker-test`: build the CPU image and run the tiny suite in it; passes when /out/index.html appears.
# Starts Debian's docker daemon when none answers (installing docker.io as root if needed), and builds a local
# stand-in for the base image when it cannot be pulled (docker/standin-base.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-stanjax}
if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || { apt-get update -qq && apt-get install -y -qq docker.io >/dev/null; }
  nohup dockerd >/tmp/stanjax-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "docker-test: no docker daemon (see /tmp/stanjax-dockerd.log)" >&2; exit 2; }
fi
base=$(sed -n 's/^ARG PYTHON_IMAGE=//p' Dockerfile)
docker image inspect "$base" >/dev/null 2>&1 || docker pull "$base" 2>/dev/null || docker/standin-base.sh "$base"
start=$(date +%s)
docker build -t "$image" --build-arg GIT_COMMIT="$(git rev-parse HEAD)" \
  --build-arg GIT_DIRTY="$(git status --porcelain --untracked-files=no | head -c 1)" .
echo "docker-test: image built in $(( $(date +%s) - start )) s"
out=out/docker-test
rm -rf "$out" && mkdir -p "$out" && chmod a+w "$out"
start=$(date +%s)
docker run --rm -v "$PWD/$out:/out" "$image" --suite tiny \
  --models eight_schools-eight_schools_noncentered covtype_synth-logistic_regression
echo "docker-test: tiny suite and report in $(( $(date +%s) - start )) s"
test -s "$out/index.html" || { echo "docker-test: FAILED, no $out/index.html" >&2; exit 1; }
grep -o 'Stan [0-9.]* via [a-z]*' "$out/index.html" | head -n 1
size=$(docker image inspect -f '{{.Size}}' "$image")
echo "docker-test: passed; $out/index.html written; image $image is $(( size / 1000000 )) MB"
