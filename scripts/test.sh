#!/usr/bin/env bash
# The one command that installs everything and runs every check (README quick start, .ci/run).
# Needs only Node.js 20 and npm: pnpm is installed through npm when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=10.34.8
if ! command -v pnpm >/dev/null 2>&1 || [[ "$(pnpm --version 2>/dev/null)" != 10.* ]]; then
  echo "› installing pnpm@${PNPM_VERSION} through npm"
  npm install --global --no-fund --no-audit "pnpm@${PNPM_VERSION}"
fi

# Debian packages the tests need: tmux (the terminal client is driven through it) and Chromium
# (the inspect page is tested in it). PostgreSQL is installed by scripts/pg.sh when missing.
missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
if (( ${#missing[@]} > 0 )); then
  echo "› installing ${missing[*]}"
  if [[ "$(id -u)" == 0 ]]; then apt_get=(apt-get); else apt_get=(sudo -n apt-get); fi
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq "${missing[@]}"
fi

echo "› pnpm install --frozen-lockfile"
pnpm install --frozen-lockfile

echo "› typecheck"
pnpm typecheck
echo "› lint"
pnpm lint
echo "› tests"
pnpm vitest run
echo "› consumer: pack the three packages (tsdown build), npm-install them outside the workspace, use them"
pnpm test:consumer
