// Attaching to sessions the daemon runs (docs/DAEMON.md): the `useDaemon` command, the "Attach to Running Session"
// pick, and Attachments (src/attach.ts) against a real daemon reached through real `threadline connect` bridges,
// with a turn started by `threadline exec --detach` waiting on its approval.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, collectUpdates, lib, startFakeProvider, tempDir } from '../support/harness.mjs';

const { Attachments, attachPickItems, daemonCommand, ThreadlineClient } = lib;
const THREADLINE = path.join(REPO, '.venv/bin/threadline');

test('useDaemon runs connect in place of a trailing serve', () => {
  assert.equal(daemonCommand('threadline serve', true), 'threadline connect');
  assert.equal(daemonCommand('/opt/tl/bin/threadline serve', true), '/opt/tl/bin/threadline connect');
  assert.equal(daemonCommand('threadline serve', false), 'threadline serve');
  assert.equal(daemonCommand('', true), 'threadline connect');
  assert.equal(daemonCommand('my-wrapper --x', true), 'my-wrapper --x');
});

test('the attach pick lists running and waiting sessions first, with their attached clients', () => {
  const items = attachPickItems([
    { sessionId: 'a', title: 'idle one', cwd: '/p', running: false, waitingForApproval: false, attachedClients: 0 },
    { sessionId: 'b', title: 'busy', cwd: '/q', running: true, waitingForApproval: false, attachedClients: 2 },
    { sessionId: 'c', title: '', cwd: '/r', running: true, waitingForApproval: true, attachedClients: 0 },
  ]);
  assert.deepEqual(items.map((i) => [i.sessionId, i.label, i.description, i.detail]), [
    ['b', 'busy', '/q', 'running · 2 attached'], ['c', 'c', '/r', 'waiting for approval'], ['a', 'idle one', '/p', 'idle'],
  ]);
});

function stopDaemon(home) {
  try {
    const pid = Number(fs.readFileSync(path.join(home, 'daemon', 'lock'), 'utf8').trim());
    if (pid) process.kill(pid, 'SIGTERM');
  } catch { /* no daemon */ }
}

test('B-DAEMON-1: attach shows a detached turn, asks its waiting approval, streams it to its end, then detaches', async (t) => {
  const provider = await startFakeProvider();
  const home = tempDir('tl-daemon-');
  const work = tempDir('tl-work-');
  const env = { ...process.env, THREADLINE_HOME: home, THREADLINE_BASE_URL: provider.url, THREADLINE_MODEL: 'fake-model', THREADLINE_SANDBOX: 'off' };
  delete env.THREADLINE_API_KEY;
  t.after(() => (stopDaemon(home), provider.stop()));
  await provider.push([
    { tool_calls: [{ id: 'call_w', name: 'write_file', arguments: { path: 'out.txt', content: 'done\n' } }] },
    { content: 'all written' },
  ]);
  const sid = execFileSync(THREADLINE, ['exec', '--detach', '--cwd', work, 'write out.txt'], { env, encoding: 'utf8', timeout: 120000 }).trim();
  assert.match(sid, /^ses_/);

  const client = new ThreadlineClient({ command: daemonCommand(`${THREADLINE} serve`, true), cwd: REPO, env, log: () => undefined });
  t.after(() => client.stop());
  await client.start();
  const listed = async () => (await client.request('listSessions', { limit: 100 })).sessions.find((s) => s.sessionId === sid);
  for (let i = 0; i < 600 && !(await listed())?.waitingForApproval; i++) await new Promise((r) => setTimeout(r, 200));
  assert.equal((await listed()).waitingForApproval, true);

  const shown = [];
  const updates = collectUpdates(client);
  const attachments = new Attachments(() => client);
  client.onUpdate((p) => attachments.fresh(p) && shown.push(p));
  const asked = [];
  client.setApprovalHandler(async (params) => (asked.push(params), 'allowOnce'));

  const r = await attachments.attach(sid, true);
  assert.equal(r.running, true);
  assert.equal(r.waitingForApproval, true);
  assert.equal(attachments.attached, sid);
  await updates.waitFor((u) => u.sessionId === sid && u.update.kind === 'turnCompleted', 60000);
  assert.equal(asked.length, 1);
  assert.equal(asked[0].tool, 'write_file');
  const kinds = shown.map((u) => u.update.kind);
  assert.ok(kinds.indexOf('userMessage') < kinds.indexOf('toolCall') && kinds.indexOf('toolCall') < kinds.indexOf('turnCompleted'), kinds.join());
  const seqs = shown.map((u) => u.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
  assert.equal(new Set(seqs).size, seqs.length);
  assert.equal(fs.readFileSync(path.join(work, 'out.txt'), 'utf8'), 'done\n');

  // attaching again asks only for what came after the last update shown: nothing is shown twice
  const before = shown.length;
  await attachments.attach(sid, false);
  assert.equal(shown.length, before);
  assert.equal((await listed()).attachedClients, 1);
  await attachments.detachUnless(); // switching to a new session
  assert.equal(attachments.attached, undefined);
  assert.equal((await listed()).attachedClients, 0);
});
