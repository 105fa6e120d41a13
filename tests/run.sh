#!/usr/bin/env bash
# Sets up everything the tests need on a fresh machine, then runs every test:
# the Python suite (server, protocol, context, e2e, reliability, Neovim plugin) and the VS Code extension's suite.
# `bash tests/run.sh --quick [PYTEST ARGS]` is the contributor's loop instead: no install, no npm, no editors, no
# mypy; ruff and the tests not marked slow (measured: tests/slow_tests.txt, read by tests/conftest.py), under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--quick" ]; then
  shift
  if [ ! -x .venv/bin/python ]; then
    echo "tests/run.sh --quick: no .venv yet; run bash tests/run.sh once (it installs)" >&2
    exit 2
  fi
  status=0
  .venv/bin/python -m ruff check server protocol tests bench || status=$?
  .venv/bin/python -m ruff format --check server protocol tests bench || status=$?
  .venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow" "$@" || status=$?
  exit $status
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# The official ACP TypeScript SDK, for the second ACP client test (tests/acp/test_acp_node.py), and the MCP
# servers from the npm registry that the MCP tests run (tests/fakes/npm_servers.py; without npm they fail saying so)
if command -v npm >/dev/null; then
  (cd tests/acp/node && npm ci --no-audit --no-fund --silent)
  npm install --no-audit --no-fund --silent --prefix tests/fakes/npm
fi

status=0
# Static checks first (settings in pyproject.toml): ruff lints server/, protocol/, tests/ and bench/ and checks their
# formatting; mypy types server/, protocol/ and tests/
.venv/bin/python -m ruff check server protocol tests bench || status=$?
.venv/bin/python -m ruff format --check server protocol tests bench || status=$?
.venv/bin/python -m mypy || status=$?
.venv/bin/python -m pytest -q -p no:cacheprovider "$@" || status=$?
# The agent-loop tests again against each native provider kind's strict double (tests/e2e/agent_support.py)
if [ $# -eq 0 ]; then
  # Every tests/e2e/test_agent_*.py but those that pick their doubles themselves, so run the same under any kind:
  # test_agent_models (a Chat Completions and an Anthropic model side by side), test_agent_native_providers (both
  # native doubles, directly) and test_agent_cache_replay (the Anthropic double's breakpoint cache).
  AGENT_LOOP=()
  for f in tests/e2e/test_agent_*.py; do
    case $f in
      */test_agent_models.py|*/test_agent_native_providers.py|*/test_agent_cache_replay.py) ;;
      *) AGENT_LOOP+=("$f") ;;
    esac
  done
  for kind in anthropic openai-responses; do
    THREADLINE_PROVIDER=$kind .venv/bin/python -m pytest -q -p no:cacheprovider "${AGENT_LOOP[@]}" || status=$?
  done
fi

if [ -f editors/vscode/scripts/test.sh ] && [ "${THREADLINE_SKIP_VSCODE:-0}" != "1" ]; then
  bash editors/vscode/scripts/test.sh || status=$?
fi
exit $status
