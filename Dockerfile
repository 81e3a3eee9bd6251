# tirlab in one container: `python -m webapp.devstack`, as `make run` runs it, with the embedded
# PostgreSQL and Redis under /app/var unless DATABASE_URL / REDIS_URL are given.
#   docker build -t tirlab . && docker run --rm -p 127.0.0.1:8000:8000 -v tirlab-var:/app/var tirlab
# docker-compose.yml runs the same image as separate web and worker containers instead. Either way the
# web is TIRLAB_WEB_PROCESSES daphne processes (one per core, up to 4) sharing one listening socket.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TIRLAB_HOST=0.0.0.0 \
    TIRLAB_PORT=8000

# tini reaps orphans and forwards signals, so devstack's clean shutdown runs on `docker stop`.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install -r requirements.txt && pip install --no-deps -r requirements-nodeps.txt

COPY . .
# Not root: the embedded PostgreSQL then runs as this user too (as root, pgserver switches users).
RUN useradd --create-home --uid 1000 tirlab && mkdir -p /app/var && chown tirlab:tirlab /app/var
USER tirlab
VOLUME ["/app/var"]
EXPOSE 8000

ENTRYPOINT ["tini", "--"]
CMD ["python", "-m", "webapp.devstack"]
