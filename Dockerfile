# CPU by default. For CUDA, build from a CUDA development image and pass
# --build-arg BASE=nvidia/cuda:12.6.3-devel-ubuntu24.04 --build-arg GM_CMAKE_ARGS="-DGGML_CUDA=ON"
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

ARG GM_CMAKE_ARGS=""
ENV GM_CMAKE_ARGS=${GM_CMAKE_ARGS} \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1

RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake git \
    && (command -v python3 >/dev/null || apt-get install -y --no-install-recommends python3 python3-venv) \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY scripts ./scripts
COPY bot ./bot
COPY cogs ./cogs
COPY worlds ./worlds
# The same portable llama.cpp build as `make play` (see scripts/install).
RUN sh scripts/install /opt/venv && rm -rf /root/.cache

ENV PATH=/opt/venv/bin:$PATH \
    GM_DATABASE=/app/data/gm.sqlite3 \
    GM_WORLDS_DIR=/app/worlds
VOLUME ["/app/data"]
CMD ["python", "-m", "bot", "run"]
