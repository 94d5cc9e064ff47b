#!/usr/bin/env bash
# Installs the system packages pgknee needs, with apt, only when they are missing:
# PostgreSQL server and contrib, pgbench (in the client package), pgbouncer, pgpool-II (pgpool2),
# and pg_wait_sampling for the installed server version. Safe to run again. No pooler runs as a
# system service afterwards: pgknee starts its own, per step.
# --browsers (for the tests): also Chromium and Firefox, to render the HTML report in both,
# a font for the charts' text, zsh and fish (pgknee completion's scripts asked for real), and
# OpenSSH's server and client (a test reads a "remote" server's /proc over ssh through an sshd of
# its own, started on a free loopback port), and iproute2 (agents run in network namespaces the
# tests make, reaching the server through veth pairs).
set -euo pipefail

browsers=0
[ "${1:-}" = "--browsers" ] && browsers=1

have_server() {
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || command -v postgres >/dev/null 2>&1
}
pg_major() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sed -E 's#.*/postgresql/([0-9]+)/bin#\1#' | sort -n | tail -1
}

missing=()
have_server || missing+=(postgresql postgresql-contrib)
command -v pgbench >/dev/null 2>&1 || missing+=(postgresql-client)
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
command -v pgpool >/dev/null 2>&1 || [ -x /usr/sbin/pgpool ] || missing+=(pgpool2)
if [ "$browsers" -eq 1 ]; then
  [ -x /usr/lib/chromium/chromium ] || missing+=(chromium)
  command -v firefox-esr >/dev/null 2>&1 || missing+=(firefox-esr)
  [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
  command -v zsh >/dev/null 2>&1 || missing+=(zsh)
  command -v fish >/dev/null 2>&1 || missing+=(fish)
  [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
  command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    if [ ${#missing[@]} -gt 0 ]; then
      echo "pgknee setup: missing system packages: ${missing[*]} (run as root or install sudo, then 'apt-get install ${missing[*]}')" >&2
      exit 1
    fi
  fi
fi

export DEBIAN_FRONTEND=noninteractive
updated=0
apt_install() {
  if [ "$updated" -eq 0 ]; then $SUDO apt-get update -qq; updated=1; fi
  # policy-rc.d keeps Debian from starting a system-wide cluster, pgbouncer and pgpool
  # service that pgknee does not use.
  $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

if [ ${#missing[@]} -gt 0 ]; then
  echo "pgknee setup: installing ${missing[*]}"
  if [ ! -e /usr/sbin/policy-rc.d ] && [ -z "$SUDO" ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt_install "${missing[@]}"
  # Debian enables pgpool2's service (and, under sudo, where no policy-rc.d is written, starts
  # it): pgknee starts its own pgpool per step, so the one just installed is disabled and stopped
  if [[ " ${missing[*]} " == *" pgpool2 "* ]] && command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable pgpool2.service >/dev/null 2>&1 || true
    [ ! -d /run/systemd/system ] || $SUDO systemctl stop pgpool2.service >/dev/null 2>&1 || true
  fi
fi

major=$(pg_major)
if [ -n "$major" ] && [ ! -e "/usr/lib/postgresql/$major/lib/pg_wait_sampling.so" ]; then
  if apt-cache show "postgresql-$major-pg-wait-sampling" >/dev/null 2>&1 || { [ "$updated" -eq 0 ] && $SUDO apt-get update -qq && updated=1; }; then
    echo "pgknee setup: installing postgresql-$major-pg-wait-sampling"
    apt_install "postgresql-$major-pg-wait-sampling" || echo "pgknee setup: pg_wait_sampling not available for PostgreSQL $major; continuing without it" >&2
  fi
fi

if [ -n "$major" ] && [ ! -e "/usr/lib/postgresql/$major/lib/pg_stat_kcache.so" ]; then
  echo "pgknee setup: installing postgresql-$major-pg-stat-kcache (the queries' CPU time, a server figure without /proc)"
  apt_install "postgresql-$major-pg-stat-kcache" || echo "pgknee setup: pg_stat_kcache not available for PostgreSQL $major; continuing without it" >&2
fi

for tool in pgbench pgbouncer pgpool; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || { echo "pgknee setup: $tool is still missing" >&2; exit 1; }
done
have_server || { echo "pgknee setup: the PostgreSQL server is still missing" >&2; exit 1; }
if [ "$browsers" -eq 1 ]; then
  [ -x /usr/lib/chromium/chromium ] || { echo "pgknee setup: chromium is still missing" >&2; exit 1; }
  command -v firefox-esr >/dev/null 2>&1 || { echo "pgknee setup: firefox-esr is still missing" >&2; exit 1; }
fi
echo "pgknee setup: system packages ready (PostgreSQL $(pg_major), $(pgbench --version | awk '{print $3}'), pgbouncer $(pgbouncer --version 2>/dev/null | head -1 | awk '{print $NF}'), pgpool-II $(PATH="$PATH:/usr/sbin" pgpool --version 2>&1 | awk '{print $3}'))"
