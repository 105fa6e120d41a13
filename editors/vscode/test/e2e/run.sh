#!/usr/bin/env bash
# In a real VS Code: code-server 4.100.3 (VS Code 1.100.3) offline and headless, the packaged .vsix installed,
# the real server + model double behind it, driven by Playwright over Debian's Chromium (test/e2e/drive.mjs).
# Needs: test/e2e/harness/node_modules (scripts/test.sh installs it), dist/threadline.vsix (npm run package).
set -euo pipefail
EXT=$(cd "$(dirname "$0")/../.." && pwd); REPO=$(cd "$EXT/../.." && pwd)
ROOT=${E2E_ROOT:-$EXT/test/e2e/.work}; PORT=${E2E_PORT:-18091}
CS="$EXT/test/e2e/harness/node_modules/.bin/code-server"
[ -x "$CS" ] || { echo "code-server missing: run scripts/test.sh (it installs test/e2e/harness)"; exit 1; }
[ -f "$EXT/dist/threadline.vsix" ] || { echo "dist/threadline.vsix missing: npm run package"; exit 1; }
rm -rf "$ROOT"; mkdir -p "$ROOT"/{tmp,xdg/config,xdg/data,xdg/cache,ud/User,exts,ws,home,out}
export TMPDIR="$ROOT/tmp" XDG_CONFIG_HOME="$ROOT/xdg/config" XDG_DATA_HOME="$ROOT/xdg/data" XDG_CACHE_HOME="$ROOT/xdg/cache"
printf '# Notes\n' > "$ROOT/ws/notes.md"; printf 'print("hello")\n' > "$ROOT/ws/app.py"
# editor grounding (issue 34, E2E_DRIVER=editor.mjs): a TypeScript file the agent edits into a type error
if [ "${E2E_DRIVER:-}" = editor.mjs ]; then
  printf 'export function helper(x: number): number {\n  return x;\n}\n' > "$ROOT/ws/lib.ts"
  printf 'import { helper } from "./lib";\n\nexport const n: number = helper(1);\n' > "$ROOT/ws/main.ts"
fi

# The model double and the server environment (the extension host inherits it; no key: the env applies). An 8k
# window: the tool definitions take ~2k of it, and the filler turns must compact well above the compacted size
# (summary + 1k kept), or the meter (the provider's count of the last request) has nowhere visible to drop to.
"$REPO/.venv/bin/python" "$REPO/tests/fakes/fake_provider.py" --port 0 --context-window 8000 > "$ROOT/fake.out" 2> "$ROOT/fake.log" &
FAKE=$!
CSPID=""
cleanup() { [ -n "$CSPID" ] && kill -- -"$CSPID" 2>/dev/null; kill "$FAKE" 2>/dev/null; wait 2>/dev/null; true; }
trap cleanup EXIT
for _ in $(seq 1 50); do grep -q FAKE_PROVIDER_URL "$ROOT/fake.out" && break; sleep 0.1; done
URL=$(sed -n 's/^FAKE_PROVIDER_URL=//p' "$ROOT/fake.out")
export THREADLINE_HOME="$ROOT/home" THREADLINE_BASE_URL="$URL" THREADLINE_MODEL=fake-model THREADLINE_CONTEXT_WINDOW=8000
printf '[context]\nkeep_recent_tokens = 1000\n' > "$THREADLINE_HOME/config.toml"

"$CS" --user-data-dir "$ROOT/ud" --extensions-dir "$ROOT/exts" --install-extension "$EXT/dist/threadline.vsix" --force > "$ROOT/install.log" 2>&1
cat > "$ROOT/ud/User/settings.json" <<J
{"workbench.startupEditor":"none","extensions.autoCheckUpdates":false,"extensions.autoUpdate":false,
 "telemetry.telemetryLevel":"off","update.mode":"none","security.workspace.trust.enabled":false,"workbench.tips.enabled":false,"git.openRepositoryInParentFolders":"never",
 "chat.commandCenter.enabled":false,"workbench.colorTheme":"Default Dark Modern",
 "threadline.serverCommand":"$REPO/.venv/bin/threadline serve","threadline.approvalPolicy":"ask"${E2E_SETTINGS:-,"threadline.editor.attachActiveFile":false}}
J
setsid "$CS" --bind-addr 127.0.0.1:$PORT --auth none --disable-telemetry --disable-update-check --disable-workspace-trust \
  --user-data-dir "$ROOT/ud" --extensions-dir "$ROOT/exts" "$ROOT/ws" > "$ROOT/cs.log" 2>&1 &
CSPID=$!
for _ in $(seq 1 60); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.5; done
CS_URL="http://127.0.0.1:$PORT/?folder=$ROOT/ws" FAKE_BASE="${URL%/v1}" WS="$ROOT/ws" \
  SHOT_DIR="${SHOT_DIR:-$EXT/test/screenshots/run}" node "$EXT/test/e2e/${E2E_DRIVER:-drive.mjs}"
