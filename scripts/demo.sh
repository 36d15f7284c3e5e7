#!/usr/bin/env bash
# The README's demo command: two example servers on one SQLite ledger, two people (alice requests, bob
# approves), driven by the official SDK client.
# Installs dependencies first when they are missing (same pinned pnpm as scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -d node_modules/.pnpm ]]; then
  command -v pnpm >/dev/null 2>&1 || npm install --global --no-fund --no-audit pnpm@10.34.8
  pnpm install --frozen-lockfile
fi
exec node --import tsx scripts/demo.ts
