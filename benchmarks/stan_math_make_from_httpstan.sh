#!/usr/bin/env bash
# Stand-ins for Stan Math's three make files (make/compiler_flags, make/libraries, make/dependencies), which the copy
# of Stan Math inside httpstan's wheel lacks: what Stan Math 5's make/compiler_flags sets by default on Linux with g++
# (-O3, -std=c++17, -pthread, -D_REENTRANT, -DBOOST_DISABLE_ASSERTS, -Wno-sign-compare; no -march, no NDEBUG), with
# httpstan's Eigen, Boost, SUNDIALS and TBB and its prebuilt SUNDIALS and TBB libraries. CmdStan's and BridgeStan's
# makefiles include them (benchmarks/cmdstan_from_httpstan.sh, benchmarks/bridgestan_from_httpstan.sh).
#
#   benchmarks/stan_math_make_from_httpstan.sh HTTPSTAN_PACKAGE_DIR MAKE_DIR
set -euo pipefail
httpstan=${1:?the httpstan package folder}
math=${2:?the folder to write the make files in (stan/lib/stan_math/make)}
mkdir -p "$math"
cat > "$math/compiler_flags" <<EOF
# Stand-in for Stan Math 5's make/compiler_flags (Linux, g++): its defaults, with httpstan's copies of the libraries.
OS := Linux
LIBRARY_SUFFIX ?= .so
CXX_TYPE ?= gcc
EXE :=
O ?= 3
EIGEN ?= $httpstan/include
BOOST ?= $httpstan/include
SUNDIALS ?= $httpstan/include
TBB ?= $httpstan/include
TBB_BIN ?= $httpstan/lib
RAPIDJSON = $httpstan/include/
INC ?= \$(INC_FIRST) -I \$(EIGEN)
CPPFLAGS_BOOST ?= -DBOOST_DISABLE_ASSERTS
CXXFLAGS_LANG ?= -std=c++17
CXXFLAGS_WARNINGS ?= -Wno-sign-compare
CXXFLAGS_OS ?= -pthread
CXXFLAGS_OS += -D_REENTRANT
ifdef STAN_THREADS
  CXXFLAGS_THREADS ?= -DSTAN_THREADS
endif
TBB_TARGETS ?= \$(TBB_BIN)/libtbb.so.2
LDFLAGS_TBB ?= -Wl,-L,"\$(TBB_BIN)" -Wl,-rpath,"\$(TBB_BIN)"
LDLIBS_TBB ?= -ltbb
CXXFLAGS += \$(CXXFLAGS_LANG) \$(CXXFLAGS_OS) \$(CXXFLAGS_WARNINGS) \$(CXXFLAGS_THREADS) \$(CXXFLAGS_OPTIM) -O\$(O) \$(INC)
CPPFLAGS += \$(CPPFLAGS_BOOST)
LDFLAGS += \$(LDFLAGS_TBB)
LDLIBS += \$(LDLIBS_TBB)
EOF
cat > "$math/libraries" <<EOF
# Stand-in for Stan Math's make/libraries: httpstan's prebuilt SUNDIALS (CVODES, IDAS, KINSOL, the serial vector).
SUNDIALS_TARGETS ?= $(printf "$httpstan/lib/libsundials_%s.a " cvodes idas kinsol nvecserial)
EOF
cat > "$math/dependencies" <<'EOF'
# Stand-in for Stan Math's make/dependencies: a .d file lists what a source includes (g++ -MM), as Stan Math's does.
DEPTARGETS = -MT $(patsubst %.d,%.o,$@) -MT $@
DEPFLAGS_OS ?= -MM -E
DEPFLAGS = $(DEPTARGETS) $(DEPFLAGS_OS) -MG -MP -MF $@
%.d: %.cpp
	$(COMPILE.cpp) $(DEPFLAGS) $<
%.d: %.hpp
	$(COMPILE.cpp) $(DEPFLAGS) $<
EOF
