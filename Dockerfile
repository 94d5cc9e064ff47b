# pgknee's image for Kubernetes (pgknee k8s render): pgknee, pgbench and pgbouncer, one
# PostgreSQL major for all (Debian bookworm's 15, as scripts/setup-system.sh installs), so every
# agent runs the same pgbench. Build: docker build -t pgknee:VERSION .
FROM debian:bookworm-slim

ARG PG_MAJOR=15
# pgbench lives in postgresql-client-15; pgbouncer for the pooled variants; python3 for pgknee
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      "postgresql-client-${PG_MAJOR}" pgbouncer python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# pgknee and its pinned dependencies (pyproject.toml) in a virtual environment of its own
COPY pyproject.toml README.md /src/
COPY src /src/src
RUN python3 -m venv /opt/pgknee \
 && /opt/pgknee/bin/pip install --no-cache-dir /src \
 && rm -rf /src

# not root (the manifests' runAsUser): pgbench runs as this user too; the state directory and
# /tmp are emptyDir volumes in the pods (the root file system is read-only there)
RUN groupadd --gid 10001 pgknee \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/pgknee --create-home --shell /usr/sbin/nologin pgknee
ENV PATH="/usr/lib/postgresql/${PG_MAJOR}/bin:/opt/pgknee/bin:${PATH}" \
    PGKNEE_STATE_DIR=/var/lib/pgknee \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
WORKDIR /var/lib/pgknee
ENTRYPOINT ["pgknee"]
CMD ["--help"]
