# gpu-advisor's service image: `docker build -t gpu-advisor .` from the repository root.
#
# Two stages. The first builds every wheel from the hashed lock files (durable-rules compiles its C
# core, so it needs a compiler the image that serves does not carry); the second holds the Python
# environment, the code and the embedded KB, rules and data, and runs as an unprivileged user on a
# filesystem it cannot write to except /tmp (deploy/deployment.yaml mounts one).

FROM python:3.12-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY requirements-build.lock requirements.lock ./
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes -r requirements-build.lock \
 && /opt/venv/bin/pip install --require-hashes --no-build-isolation -r requirements.lock
COPY pyproject.toml README.md ./
COPY engine engine
COPY api api
COPY cli cli
COPY kb kb
COPY rules rules
COPY data data
# the code stays where engine/knowledge/paths.py finds the embedded kb/, rules/ and data/ beside it
RUN /opt/venv/bin/pip install --no-deps --no-build-isolation -e . \
 && /opt/venv/bin/python -m compileall -q engine api cli

FROM python:3.12-slim-bookworm
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    HOME=/tmp GPU_ADVISOR_CACHE=off
RUN groupadd --system --gid 10001 advisor && useradd --system --uid 10001 --gid advisor advisor
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
WORKDIR /app
USER 10001:10001
EXPOSE 8000
CMD ["gpu-advisor", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
