# CPU by default. How to run it, and the CUDA build: docs/discord.md, "Docker".
ARG BASE=python:3.11-slim-bookworm

# A compiler for llama.cpp and a Python (3.11 or later) that can make a venv: the python image has its own,
# a CUDA devel image (Ubuntu 24.04: Python 3.12) gets the distribution's.
FROM ${BASE} AS system
ARG DEBIAN_FRONTEND=noninteractive
# Distribution packages follow the base image's release rather than pinned versions, which differ per base.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake git \
    && if ! python3 -m venv /tmp/probe >/dev/null 2>&1; then \
        apt-get install -y --no-install-recommends python3 python3-venv; \
    fi \
    && rm -rf /tmp/probe /var/lib/apt/lists/* \
    && python3 -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11 or later is needed: use an Ubuntu 24.04 base")'

# What the dependency layers below are keyed on, taken out of pyproject.toml: the llama-cpp-python pin, as a
# stub project for scripts/install, and the other requirements. Editing anything else in pyproject.toml
# leaves those layers (and the llama.cpp compile) cached.
FROM system AS spec
COPY pyproject.toml /src/pyproject.toml
RUN mkdir -p /spec/llama \
    && pin=$(grep -E '^ *"llama-cpp-python==' /src/pyproject.toml) \
    && printf '[project]\nname = "discord-gm-llama"\nversion = "0"\ndependencies = [\n%s\n]\n\n[tool.setuptools]\npackages = []\n' \
        "$pin" > /spec/llama/pyproject.toml \
    && python3 -c 'import tomllib; p = tomllib.load(open("/src/pyproject.toml", "rb")); print("\n".join(p["build-system"]["requires"] + [d for d in p["project"]["dependencies"] if not d.startswith("llama-cpp-python")]))' \
        > /spec/requirements.txt

FROM system
ARG GM_CMAKE_ARGS=""
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH

# llama.cpp, compiled by scripts/install with the portable flags of `make play` plus GM_CMAKE_ARGS. This layer
# depends on the pin, the script, the flags and the base only: code and other dependencies never rebuild it.
# There is no GPU driver at build time: for the script's closing import check, a CUDA build loads the
# toolkit's stub libcuda (for that command only; at run time `--gpus all` brings the driver's).
COPY scripts/install /opt/llama/scripts/install
COPY --from=spec /spec/llama/pyproject.toml /opt/llama/pyproject.toml
RUN if [ -e /usr/local/cuda/lib64/stubs/libcuda.so ]; then \
        mkdir /tmp/cuda-stub && ln -s /usr/local/cuda/lib64/stubs/libcuda.so /tmp/cuda-stub/libcuda.so.1; \
    fi \
    && LD_LIBRARY_PATH="/tmp/cuda-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" sh /opt/llama/scripts/install /opt/venv \
    && pip uninstall -y -q discord-gm-llama \
    && rm -rf /opt/llama /tmp/cuda-stub /root/.cache

# The other dependencies; llama-cpp-python is already there at the pin and is kept.
COPY --from=spec /spec/requirements.txt /opt/requirements.txt
RUN pip install -q -r /opt/requirements.txt && rm /opt/requirements.txt

# Not root: the code and the venv stay root's (read-only to the bot); only the data folder is the bot's.
# A host folder bind-mounted there must be writable by uid 10001 (or run with --user: docs/discord.md).
RUN groupadd --gid 10001 gm \
    && useradd --uid 10001 --gid gm --no-log-init --create-home --shell /usr/sbin/nologin gm \
    && mkdir -p /app/data \
    && chown gm:gm /app/data

# The code last, so that an edit rebuilds only this. Editable, as `make play` installs it, so that its default
# paths are under /app; pip check proves the layers above hold what pyproject.toml asks for.
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY cogs ./cogs
COPY worlds ./worlds
COPY scripts/files-only.txt ./scripts/
RUN pip install -q --no-deps --no-build-isolation -e . \
    && pip check \
    && pip install -q --no-deps -r scripts/files-only.txt \
    && python -m compileall -q bot cogs

USER 10001:10001

ENV GM_DATABASE=/app/data/gm.sqlite3 \
    GM_WORLDS_DIR=/app/worlds
VOLUME ["/app/data"]

# Healthy while the bot holds its database (the flock on gm.sqlite3 itself, seen in /proc/locks without taking
# it: start-up got that far and the process still has it) and the database opens read-only.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, sqlite3, sys; db = os.environ['GM_DATABASE']; ino = os.stat(db).st_ino; any('FLOCK' in line and line.split()[5].endswith(':%d' % ino) for line in open('/proc/locks')) or sys.exit('no process holds ' + db); sqlite3.connect('file:' + db + '?mode=ro', uri=True, timeout=5).execute('SELECT count(*) FROM sqlite_master').fetchone()"]

CMD ["python", "-m", "bot", "run"]
