#!/usr/bin/env bash
# A local CmdStan against the Stan library the bundled Stan ships: no registry ships a CmdStan and GitHub's release
# downloads are unreachable here, so CmdStan's driver (its makefile and src/cmdstan, brought by the library's
# `fetch` of github:stan-dev/cmdstan) is built against httpstan's copy of Stan, Stan Math, Eigen, Boost, SUNDIALS,
# TBB and stanc 2.39. Stan Math's three make files are not in that copy: benchmarks/stan_math_make_from_httpstan.sh
# writes stand-ins that set what Stan Math 5's make/compiler_flags sets by default on Linux with g++ (-O3,
# -std=c++17, -pthread, -D_REENTRANT, -DBOOST_DISABLE_ASSERTS, -Wno-sign-compare; no -march, no NDEBUG) and link
# httpstan's prebuilt SUNDIALS and TBB.
# CmdStan's own defaults stay as its makefile has them (precompiled model header on; STAN_CPP_OPTIMS off).
# Never committed: the folder lives outside the checkout (CMDSTAN=... for stanjax).
#
#   benchmarks/cmdstan_from_httpstan.sh CMDSTAN_SNAPSHOT_GIT_DIR OUT_DIR
#   e.g. benchmarks/cmdstan_from_httpstan.sh /work/.mirror/stan-dev+cmdstan/repo /work/cmdstan
set -euo pipefail
snapshot=${1:?the git directory of a CmdStan snapshot}
out=${2:?the folder to assemble CmdStan in}
python=${PYTHON:-.venv/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
httpstan=$("$python" -c 'import httpstan, pathlib; print(pathlib.Path(httpstan.__file__).parent)')

mkdir -p "$out"
git --git-dir="$snapshot" archive HEAD | tar -x -C "$out"
cd "$out"
# Stan's headers as a tree of links, so CmdStan's precompiled header (written beside model_header.hpp) lands here,
# not in httpstan's package.
rm -rf stan && mkdir -p stan/src stan/lib/stan_math/make
cp -rs "$httpstan/include/stan" stan/src/stan
# Stan 2.39's Pathfinder takes one more template argument than CmdStan 2.36's driver passes.
sed -i -z 's/pathfinder_lbfgs_single<\n *false, stan::model::model_base>/pathfinder_lbfgs_single<false, false, stan::model::model_base>/' \
  src/cmdstan/command.hpp
grep -q "pathfinder_lbfgs_single<false, false," src/cmdstan/command.hpp
"$here/stan_math_make_from_httpstan.sh" "$httpstan" stan/lib/stan_math/make
mkdir -p bin && cp "$httpstan/stanc" bin/stanc
make -j2 build
