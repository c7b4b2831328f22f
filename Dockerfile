# stanjax in a container: `docker run --rm -v "$PWD/out:/out" stanjax` runs the quick suite on the CPU with the
# bundled Stan and writes the report to /out (index.html, README.md, records). See README "Docker".
#   --build-arg DEVICE=cuda   jax's CUDA 12 wheels from requirements-cuda.lock (then: docker run --gpus all ...
#                             stanjax --suite gpu); without a GPU it runs on the CPU, and --device gpu is exit 2
#   --build-arg STAN=cmdstan  CmdStan installed by cmdstanpy at build time (needs the internet), used for Stan
# Each ARG is declared just before its first use, so the CPU, CUDA and CmdStan images share the layers above it
# (an ARG's value is part of the cache key of every RUN after it).
ARG PYTHON_IMAGE=python:3.12-slim
FROM ${PYTHON_IMAGE}

# A C++ toolchain: Stan programs are compiled (at build time below, and for any program changed later).
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 stanjax
ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 STANJAX_CACHE=/home/stanjax/.cache/stanjax

# The locked dependencies first (a layer that survives source edits and that every variant shares).
COPY requirements.lock /opt/stanjax/requirements.lock
RUN python3 -m venv /opt/venv \
 && pip install --no-cache-dir --require-hashes -r /opt/stanjax/requirements.lock

# CUDA 12 wheels if asked for, hash-pinned in requirements-cuda.lock (`make lock-cuda`), which holds every package
# the two locks share to requirements.lock's version; the build fails if installing it changed any of them.
ARG DEVICE=cpu
COPY requirements-cuda.lock /opt/stanjax/requirements-cuda.lock
RUN case "$DEVICE" in \
      cpu) ;; \
      cuda) pip freeze --all | LC_ALL=C sort > /tmp/before.txt \
         && pip install --no-cache-dir --require-hashes -r /opt/stanjax/requirements-cuda.lock \
         && pip freeze --all | LC_ALL=C sort | LC_ALL=C comm -23 /tmp/before.txt - > /tmp/changed.txt \
         && if [ -s /tmp/changed.txt ]; then \
              echo "requirements-cuda.lock changed packages pinned by requirements.lock (run make lock-cuda):" >&2; \
              cat /tmp/changed.txt >&2; exit 2; \
            fi \
         && rm /tmp/before.txt /tmp/changed.txt ;; \
      *) echo "DEVICE must be cpu or cuda, got $DEVICE" >&2; exit 2 ;; \
    esac

COPY --chown=stanjax:stanjax . /opt/stanjax
RUN pip install --no-cache-dir --no-deps --no-build-isolation --config-settings editable_mode=strict -e /opt/stanjax \
 && chown stanjax:stanjax /opt/stanjax

USER stanjax
WORKDIR /home/stanjax
ARG STAN=bundled
ARG CMDSTAN_VERSION=2.37.0
RUN if [ "$STAN" = cmdstan ]; then \
      python -m cmdstanpy.install_cmdstan --version "$CMDSTAN_VERSION" --dir /home/stanjax/.cmdstan; \
    elif [ "$STAN" != bundled ]; then echo "STAN must be bundled or cmdstan, got $STAN" >&2; exit 2; fi
# Every Stan program compiled now, into the caches the runs use (httpstan's, or .cache/stanjax/cmdstan).
RUN stanjax compile

# The commit the image was built from, for the records' provenance (last: a new commit alone rebuilds nothing above).
ARG GIT_COMMIT=""
ARG GIT_DIRTY=""
ENV STANJAX_GIT_COMMIT=${GIT_COMMIT} STANJAX_GIT_DIRTY=${GIT_DIRTY}

ENTRYPOINT ["/opt/stanjax/docker/entrypoint.sh"]
