#!/usr/bin/env bash
# `npm test`: 1. RPC unit tests (node:test, real server), 2. webview replay in headless Chromium, 3. in code-server.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run --silent typecheck
node esbuild.mjs
npm run --silent package >/dev/null  # the e2e installs this .vsix
echo "== 1/3 unit: RPC layer against the real server"; npm run --silent test:unit
echo "== 2/3 webview: recorded protocol replay in headless Chromium"; npm run --silent test:webview
echo "== 3/3 e2e: the packaged .vsix inside code-server (VS Code 1.100.3)"; npm run --silent test:e2e
echo "== 3/3 e2e: editor grounding with VS Code's TypeScript features (issue 34)"
E2E_DRIVER=editor.mjs E2E_SETTINGS=',"threadline.editor.settleMs":10000' npm run --silent test:e2e
echo "== 3/3 e2e: the daemon: attach to a task started by exec --detach and answer its waiting approval"
E2E_DRIVER=attach.mjs E2E_SETTINGS=',"threadline.useDaemon":true,"threadline.editor.attachActiveFile":false' npm run --silent test:e2e
echo "== 3/3 e2e: worktree tasks: the Tasks view opens a task's diff and merges it (issue 54)"
# its own root: the attach run's daemon may still be idling out on test/e2e/.work/home, and a daemon that exits
# removes the socket path of its home, which would be this run's daemon's if both used the same folder
E2E_ROOT="$PWD/test/e2e/.work-tasks" E2E_DRIVER=tasks.mjs \
  E2E_SETTINGS=',"threadline.useDaemon":true,"threadline.editor.attachActiveFile":false' npm run --silent test:e2e
