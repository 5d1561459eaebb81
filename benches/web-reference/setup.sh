#!/usr/bin/env bash
# setup.sh: prepares the web reference benchmark. Idempotent.
#  - Debian package `chromium` (apt-get) if /usr/bin/chromium is missing; no browser download.
#  - `npm ci` here when package-lock.json changed since the last install.
#  - `npm ci` in tests/fixtures (bench-server.mjs needs it) when its lockfile changed,
#    with the same stamp file scripts/setup uses.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'web-reference setup: %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x /usr/bin/chromium ]; then
  say "installing Debian package chromium"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
command -v node >/dev/null 2>&1 || { say "node not found (Node >= 20 is needed)"; exit 1; }

# npm ci when node_modules is missing or older than the lockfile (sha256 stamp).
npm_ci_if_stale() {
  local dir=$1 stamp=$1/node_modules/.mcp-apps-host-lock.sha256 want
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > "$stamp"
  fi
}
npm_ci_if_stale .
npm_ci_if_stale ../../tests/fixtures
say "ready ($(/usr/bin/chromium --version 2>/dev/null | head -1))"
