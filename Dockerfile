# stanjax in a container: `docker run --rm -v "$PWD/out:/out" stanjax` runs the quick suite on the CPU with the
# bundled Stan and writes the report to /out (index.html, README.md, records). See README "Docker".
#   --build-arg DEVICE=cuda   jax's CUDA 12 wheels (then: docker run --gpus all ... stanjax --suite gpu)
#   --build-arg STAN=cmdstan  CmdStan installed by cmdstanpy at build time (needs the internet), used for Stan
ARG PYTHON_IMAGE=python:3.12-slim
FROM ${PYTHON_IMAGE}

ARG DEVICE=cpu
ARG STAN=bundled
ARG CMDSTAN_VERSION=2.37.0
ARG GIT_COMMIT=""
ARG GIT_DIRTY=""

# A C++ toolchain: Stan programs are compiled (at build time below, and for any program changed later).
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 stanjax
ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 \
    STANJAX_CACHE=/home/stanjax/.cache/stanjax STANJAX_GIT_COMMIT=${GIT_COMMIT} STANJAX_GIT_DIRTY=${GIT_DIRTY}

# The locked dependencies first (a layer that survives source edits), then CUDA wheels if asked for.
COPY requirements.lock /opt/stanjax/requirements.lock
RUN python3 -m venv /opt/venv \
 && pip install --no-cache-dir --require-hashes -r /opt/stanjax/requirements.lock \
 && if [ "$DEVICE" = cuda ]; then \
      pip install --no-cache-dir "jax[cuda12]==$(python -c 'import jax; print(jax.__version__)')"; \
    elif [ "$DEVICE" != cpu ]; then echo "DEVICE must be cpu or cuda, got $DEVICE" >&2; exit 2; fi

COPY --chown=stanjax:stanjax . /opt/stanjax
RUN pip install --no-cache-dir --no-deps --no-build-isolation -e /opt/stanjax \
 && chown stanjax:stanjax /opt/stanjax

USER stanjax
WORKDIR /home/stanjax
RUN if [ "$STAN" = cmdstan ]; then \
      python -m cmdstanpy.install_cmdstan --version "$CMDSTAN_VERSION" --dir /home/stanjax/.cmdstan; \
    elif [ "$STAN" != bundled ]; then echo "STAN must be bundled or cmdstan, got $STAN" >&2; exit 2; fi
# Every Stan program compiled now, into the caches the runs use (httpstan's, or .cache/stanjax/cmdstan).
RUN stanjax compile

ENTRYPOINT ["/opt/stanjax/docker/entrypoint.sh"]
