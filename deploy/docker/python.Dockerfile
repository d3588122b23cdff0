# The Python images with Docker: continuum-python (the function gateway and its Python function
# instances) by default, continuum-fl (the FL orchestrator and its Flower services) with
# --build-arg VARIANT=fl. `continuum image build` makes the same layout without a Docker daemon,
# from this host's python3. Not built by this project's tests (no Docker).
#
#   docker build -f deploy/docker/python.Dockerfile -t continuum-project/continuum-python:0.1.0-dev .
#   docker build -f deploy/docker/python.Dockerfile --build-arg VARIANT=fl -t continuum-project/continuum-fl:0.1.0-dev .
#
# Layout (what the chart's arguments name): /usr/local/bin/continuum, /opt/continuum/python/src,
# /opt/continuum/python/functions, the venv at /opt/continuum/venv (functions) or
# /opt/continuum/venv-fl (FL), user 65532.
ARG GO_VERSION=1.26.8
ARG PYTHON_VERSION=3.11

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/continuum-project/continuum/internal/version.Commit=${COMMIT}" \
      -o /out/continuum ./cmd/continuum

FROM python:${PYTHON_VERSION}-slim-bookworm
ARG VARIANT=functions
# The pinned requirements make setup installs (python/requirements.txt for functions,
# python/requirements-fl.txt for FL), in a venv named as the daemonless image names it. FL's
# PyTorch is Debian's CPU build (python3-torch, with OpenBLAS), so its venv is made by Debian's
# python3 with --system-site-packages, as make setup makes it.
COPY python/requirements.txt python/requirements-fl.txt /tmp/req/
RUN set -e; \
    if [ "$VARIANT" = fl ]; then \
      apt-get update && apt-get install -y --no-install-recommends python3-torch libopenblas0-serial python3-venv && \
      rm -rf /var/lib/apt/lists/* && \
      /usr/bin/python3 -m venv --system-site-packages /opt/continuum/venv-fl && \
      /opt/continuum/venv-fl/bin/pip install --no-cache-dir --ignore-installed -r /tmp/req/requirements-fl.txt; \
    else python -m venv /opt/continuum/venv && /opt/continuum/venv/bin/pip install --no-cache-dir -r /tmp/req/requirements.txt; fi; \
    rm -rf /tmp/req && \
    groupadd -g 65532 continuum && useradd -u 65532 -g 65532 -d /home/continuum -m -s /sbin/nologin continuum
COPY python/src /opt/continuum/python/src
COPY python/functions /opt/continuum/python/functions
COPY --from=build /out/continuum /usr/local/bin/continuum
ENV CONTINUUM_PYTHON=/opt/continuum/venv/bin/python \
    CONTINUUM_FL_PYTHON=/opt/continuum/venv-fl/bin/python \
    CONTINUUM_PYTHON_SRC=/opt/continuum/python/src \
    PYTHONDONTWRITEBYTECODE=1
USER 65532:65532
WORKDIR /home/continuum
ENTRYPOINT ["/usr/local/bin/continuum"]
