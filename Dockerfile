# syntax=docker/dockerfile:1
# Thoughtline worker image. Stage one builds every wheel (with a compiler, for dependencies
# that ship no wheel for the target platform); the final stage installs those wheels offline,
# has no compiler, runs as an unprivileged user and starts `thoughtline serve`. The `otel`
# extra is built in too, so the same image runs `thoughtline export otlp` (docs/otel.md).
# Pin the base by digest for reproducible builds: --build-arg PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:...
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The toolchain comes from the base image's own Debian release; its version follows the base
# image pin, so pinning it again here would only break on the next point release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
RUN pip wheel --wheel-dir /wheels '.[otel]'

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# In a container the health server must answer on the container's address, not only on its
# loopback (the worker's own default, for a laptop): probes and Prometheus come from outside.
ENV THOUGHTLINE_METRICS_HOST=0.0.0.0
# The same numeric ids as the Helm chart's securityContext, so runAsNonRoot can be verified.
RUN groupadd --system --gid 10001 thoughtline \
    && useradd --system --uid 10001 --gid thoughtline --home-dir /var/lib/thoughtline \
       --create-home --shell /usr/sbin/nologin thoughtline
# The wheels are bind-mounted from the build stage, so they never become an image layer.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels /wheels/*.whl
# The only writable place the worker needs (the embedded Redis of `serve` without
# THOUGHTLINE_REDIS_URL); in Kubernetes the root filesystem is read-only.
WORKDIR /var/lib/thoughtline
USER 10001:10001
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=3s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('THOUGHTLINE_METRICS_PORT', '9464') + '/healthz', timeout=2)"]
ENTRYPOINT ["thoughtline", "serve"]
