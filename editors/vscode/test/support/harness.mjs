// Shared by the tests: the repo's real server and the local model-service double (tests/fakes/fake_provider.py).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
export const EXT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const REPO = path.resolve(EXT_DIR, '../..');
export const PYTHON = path.join(REPO, '.venv/bin/python');
export const SERVER_COMMAND = `${path.join(REPO, '.venv/bin/threadline')} serve`;
export const lib = require(path.join(EXT_DIR, 'out/testing.js'));

/** Start the model-service double; resolves with {url, base, push, requests, stop}. */
export async function startFakeProvider(args = []) {
  const proc = spawn(PYTHON, [path.join(REPO, 'tests/fakes/fake_provider.py'), '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /FAKE_PROVIDER_URL=(\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (code) => reject(new Error(`fake provider exited (${code}): ${err}`)));
  });
  const base = url.replace(/\/v1$/, '');
  return {
    url, base, proc,
    push: async (items) => {
      const r = await fetch(`${base}/_control/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) });
      if (!r.ok) throw new Error(`push failed: ${r.status} ${await r.text()}`);
    },
    requests: async () => (await fetch(`${base}/_control/requests`)).json(),
    stop: () => proc.kill(),
  };
}

export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A ThreadlineClient against the real server with its own THREADLINE_HOME and the double as provider. */
export function makeClient(provider, { home = tempDir('tl-home-'), contextWindow, configToml, logs = [], ...options } = {}) {
  if (configToml) fs.writeFileSync(path.join(home, 'config.toml'), configToml);
  const env = { ...process.env, THREADLINE_HOME: home, THREADLINE_BASE_URL: provider.url, THREADLINE_MODEL: 'fake-model' };
  delete env.THREADLINE_API_KEY;
  if (contextWindow) env.THREADLINE_CONTEXT_WINDOW = String(contextWindow);
  const client = new lib.ThreadlineClient({ command: SERVER_COMMAND, cwd: REPO, env, log: (l) => logs.push(l), ...options });
  return { client, home, logs };
}

/** Collect sessionUpdate notifications; `waitFor(pred)` resolves with the first matching one. */
export function collectUpdates(client) {
  const updates = [];
  const waiters = [];
  client.onUpdate((u) => {
    updates.push(u);
    for (const w of [...waiters]) if (w.pred(u)) waiters.splice(waiters.indexOf(w), 1), w.resolve(u);
  });
  return {
    updates,
    kinds: () => updates.map((u) => u.update.kind),
    waitFor: (pred, ms = 20000) => new Promise((resolve, reject) => {
      const hit = updates.find(pred);
      if (hit) return resolve(hit);
      const t = setTimeout(() => reject(new Error('timed out waiting for an update')), ms);
      waiters.push({ pred, resolve: (u) => (clearTimeout(t), resolve(u)) });
    }),
  };
}

/** Server config for the long scripted session: a small window and a short kept tail, so it compacts early. */
export const COMPACTING_CONFIG = '[context]\nkeep_recent_tokens = 1000\n';
