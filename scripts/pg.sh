#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests and benchmarks, on 127.0.0.1 only.
#
#   scripts/pg.sh start [STATE_DIR]   start a cluster, print its URL, write STATE_DIR/url
#   scripts/pg.sh stop  [STATE_DIR]   stop it and delete its data folder
#
# STATE_DIR defaults to .tmp/pg (under the repository). `start` installs Debian's
# `postgresql` package with apt-get when no /usr/lib/postgresql/*/bin/initdb exists,
# creates a temporary data folder (owned by `postgres` when run as root: the server
# refuses to run as root), initialises it with trust authentication for loopback
# connections only, starts it on a free port and creates the database `baton_test`.
# Files written to STATE_DIR: url (postgresql://postgres@127.0.0.1:PORT/baton_test),
# datadir, bindir, log (the server log path). Nothing listens beyond 127.0.0.1.
# BATON_PG_SERVER_OPTIONS adds server settings, e.g. "-c synchronous_commit=off" (the test
# setup does: faster commits, same atomicity; the benchmark keeps the defaults).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
COMMAND="${1:-}"
STATE_DIR="${2:-$ROOT/.tmp/pg}"
DATABASE=baton_test

log() { echo "[pg.sh] $*" >&2; }
die() { echo "[pg.sh] error: $*" >&2; exit 1; }

# Run a server binary as the cluster owner: `postgres` when we are root, else ourselves.
as_owner() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

find_bindir() {
  local initdb
  initdb="$(ls -1d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)"
  [[ -n "$initdb" ]] && dirname "$initdb"
}

install_postgres() {
  log "no /usr/lib/postgresql/*/bin/initdb: installing Debian's postgresql package"
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "PostgreSQL is not installed and we are not root (no sudo either)"
    sudo=(sudo -n)
  fi
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and apt-get is not available"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends postgresql >&2 || die "apt-get install postgresql failed"
}

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close();});"
}

start() {
  if [[ -f "$STATE_DIR/datadir" ]] && [[ -d "$(cat "$STATE_DIR/datadir")" ]]; then
    die "a cluster from $STATE_DIR is still there ($(cat "$STATE_DIR/datadir")); run: $0 stop $STATE_DIR"
  fi
  local bindir
  bindir="$(find_bindir || true)"
  if [[ -z "$bindir" ]]; then
    install_postgres
    bindir="$(find_bindir || true)"
    [[ -n "$bindir" ]] || die "the postgresql package installed no /usr/lib/postgresql/*/bin/initdb"
  fi
  if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
    die "running as root but there is no 'postgres' user to own the cluster"
  fi

  local datadir
  datadir="$(mktemp -d "${TMPDIR:-/tmp}/baton-pg.XXXXXX")"
  chmod 700 "$datadir"
  [[ "$(id -u)" == 0 ]] && chown postgres: "$datadir"
  mkdir -p "$STATE_DIR"
  echo "$datadir" >"$STATE_DIR/datadir"
  echo "$bindir" >"$STATE_DIR/bindir"

  as_owner "$bindir/initdb" -D "$datadir/data" -U postgres --auth=trust --encoding=UTF8 --no-locale \
    >"$datadir/initdb.log" 2>&1 || { cat "$datadir/initdb.log" >&2; die "initdb failed"; }
  # Loopback only, trust only for loopback (initdb's default hba also lists ::1 and the socket).
  cat >"$datadir/pg_hba.conf" <<'HBA'
local   all  all                trust
host    all  all  127.0.0.1/32  trust
HBA
  [[ "$(id -u)" == 0 ]] && chown postgres: "$datadir/pg_hba.conf"

  local port attempt
  for attempt in 1 2 3 4 5; do
    port="$(free_port)"
    if as_owner "$bindir/pg_ctl" -D "$datadir/data" -l "$datadir/server.log" -w -t 30 start \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$datadir -c hba_file=$datadir/pg_hba.conf -c max_connections=200 ${BATON_PG_SERVER_OPTIONS:-}" \
      >/dev/null; then
      break
    fi
    log "start on port $port failed (attempt $attempt)"
    tail -n 5 "$datadir/server.log" >&2 || true
    port=""
  done
  [[ -n "$port" ]] || die "could not start PostgreSQL; see $datadir/server.log"

  "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
    -c "CREATE DATABASE $DATABASE" >/dev/null || die "could not create database $DATABASE"

  local url="postgresql://postgres@127.0.0.1:$port/$DATABASE"
  echo "$url" >"$STATE_DIR/url"
  echo "$datadir/server.log" >"$STATE_DIR/log"
  log "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, data in $datadir"
  echo "$url"
}

stop() {
  [[ -f "$STATE_DIR/datadir" ]] || { log "nothing to stop in $STATE_DIR"; return 0; }
  local datadir bindir
  datadir="$(cat "$STATE_DIR/datadir")"
  bindir="$(cat "$STATE_DIR/bindir" 2>/dev/null || find_bindir || true)"
  if [[ -d "$datadir/data" ]] && [[ -n "$bindir" ]]; then
    as_owner "$bindir/pg_ctl" -D "$datadir/data" -m fast -w -t 20 stop >/dev/null 2>&1 ||
      as_owner "$bindir/pg_ctl" -D "$datadir/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
  fi
  case "$datadir" in
    */baton-pg.*) rm -rf "$datadir" ;;
    *) log "refusing to delete unexpected folder $datadir" ;;
  esac
  rm -f "$STATE_DIR/url" "$STATE_DIR/datadir" "$STATE_DIR/bindir" "$STATE_DIR/log"
  rmdir "$STATE_DIR" 2>/dev/null || true
  log "stopped"
}

case "$COMMAND" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop [STATE_DIR]" >&2; exit 2 ;;
esac
