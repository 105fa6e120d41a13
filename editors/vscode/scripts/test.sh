#!/usr/bin/env bash
# CI entry point for the VS Code extension: system packages, npm packages, build, package, then all tests.
# Assumes the repository's .venv exists (the top-level test command creates it first). Offline apart from
# apt and the npm registry; nothing downloads a browser or binary at run time.
set -euo pipefail
EXT=$(cd "$(dirname "$0")/.." && pwd)
cd "$EXT"
[ -x ../../.venv/bin/threadline ] || { echo "missing ../../.venv: run the repository's set-up command first"; exit 1; }

# Debian packages: Chromium for Playwright (executablePath /usr/bin/chromium), ripgrep to seed code-server's
# @vscode/ripgrep (its postinstall would download otherwise), compilers/headers for code-server's native modules.
if ! { command -v chromium && command -v rg && dpkg -s libkrb5-dev build-essential; } >/dev/null 2>&1; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    chromium ripgrep libkrb5-dev build-essential python3 fonts-dejavu-core curl
fi

npm ci --no-audit --no-fund

# code-server (pinned in test/e2e/harness/package-lock.json); reinstalled only when the lock changes.
H="$EXT/test/e2e/harness"
if ! cmp -s "$H/package-lock.json" "$H/node_modules/.package-lock-ci.json" 2>/dev/null || [ ! -x "$H/node_modules/.bin/code-server" ]; then
  export TMPDIR=${TMPDIR:-/tmp}
  RGC="$TMPDIR/vscode-ripgrep-cache-1.15.11"; mkdir -p "$RGC/s"; cp "$(command -v rg)" "$RGC/s/rg"
  tar czf "$RGC/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$RGC/s" rg
  # code-server's postinstall runs nested `npm install`s of its own pinned tree (native modules built from
  # source); npm 11 blocks dependency scripts by default, so allow them for this harness only.
  ( cd "$H" && npm_config_yes=true npm_config_unsafe_perm=true npm_config_dangerously_allow_all_scripts=true \
      npm ci --no-audit --no-fund --foreground-scripts > "$H/install.log" 2>&1 ) || { tail -40 "$H/install.log"; exit 1; }
  cp "$H/package-lock.json" "$H/node_modules/.package-lock-ci.json"
fi


npm test
