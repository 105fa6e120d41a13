// The extension's side of the daemon (docs/DAEMON.md) through its RPC layer: with threadline.useDaemon the client
// spawns `threadline connect`; a turn started by `threadline exec --detach` waits for an approval with nobody
// attached; the client lists it as waiting, attaches from seq 0, sees the earlier updates, answers, sees the end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, SERVER_COMMAND, collectUpdates, lib, startFakeProvider, tempDir } from '../support/harness.mjs';

test('serverCommand swaps serve for connect only with the daemon', () => {
  assert.equal(lib.serverCommand('threadline serve', false), 'threadline serve');
  assert.equal(lib.serverCommand('threadline serve', true), 'threadline connect');
  assert.equal(lib.serverCommand('/opt/tl/bin/threadline serve --log-level debug', true), '/opt/tl/bin/threadline connect --log-level debug');
  assert.equal(lib.serverCommand('/srv/serve/threadline serve', true), '/srv/serve/threadline connect');
});

/** A task started by `threadline exec --detach` (the provider double answers ``turns``), and the extension's RPC
 *  client on `threadline connect` to the daemon it runs in; the daemon is stopped afterwards. */
async function withDetachedTask(turns, prompt, body) {
  const provider = await startFakeProvider();
  const home = tempDir('tl-daemon-');
  const work = tempDir('tl-work-');
  const env = { ...process.env, THREADLINE_HOME: home, THREADLINE_BASE_URL: provider.url, THREADLINE_MODEL: 'fake-model', THREADLINE_API_KEY: 'test-key', THREADLINE_CONTEXT_WINDOW: '64000' };
  const client = new lib.ThreadlineClient({ command: lib.serverCommand(SERVER_COMMAND, true), cwd: REPO, env, log: () => undefined });
  try {
    await provider.push(turns);
    const bin = SERVER_COMMAND.replace(/ serve$/, '');
    const sid = execFileSync(bin, ['exec', '--detach', '--cwd', work, prompt], { env, cwd: REPO, encoding: 'utf8', timeout: 120000 }).trim();
    assert.match(sid, /^ses_/);
    await body({ sid, client, work });
  } finally {
    await client.stop().catch(() => undefined);
    try {
      const pid = Number(fs.readFileSync(path.join(home, 'daemon', 'lock'), 'utf8').trim());
      if (pid) process.kill(pid, 'SIGTERM');
    } catch { /* no daemon left */ }
    provider.stop();
  }
}

test('B-DAEMON-1: attach to a detached turn, see what came before, answer its approval, see it finish', { timeout: 240000 }, () => withDetachedTask(
  [
    { tool_calls: [{ id: 'call_w', name: 'write_file', arguments: { path: 'report.txt', content: 'ready\n' } }] },
    { content: 'report written' },
  ],
  'write the report',
  async ({ sid, client, work }) => {
    const approvals = [];
    client.setApprovalHandler(async (params) => (approvals.push(params), 'allowOnce'));
    const updates = collectUpdates(client);
    await client.start();
    let listed;
    for (let i = 0; i < 600 && !listed?.waitingForApproval; i++) {
      const { sessions } = await client.request('listSessions', { limit: 100 });
      listed = sessions.find((s) => s.sessionId === sid);
      if (!listed?.waitingForApproval) await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(listed?.waitingForApproval, true, JSON.stringify(listed));
    assert.equal(listed.running, true);

    const r = await client.request('attachSession', { sessionId: sid, sinceSeq: 0 });
    assert.equal(r.truncated ?? false, false);
    await updates.waitFor((u) => u.sessionId === sid && u.update.kind === 'turnCompleted', 120000);
    const mine = updates.updates.filter((u) => u.sessionId === sid);
    const seqs = mine.map((u) => u.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i), 'no gap, no duplicate');
    assert.ok(seqs[0] <= r.seq, 'the earlier updates were replayed');
    assert.ok(mine.some((u) => u.update.kind === 'toolCall'), 'the tool call made while nobody was attached');
    assert.equal(approvals.length, 1);
    assert.equal(approvals[0].tool, 'write_file');
    assert.equal(fs.readFileSync(path.join(work, 'report.txt'), 'utf8'), 'ready\n');
  },
));

test('B-DAEMON-1: after the bridge restarts, the session on screen is re-attached from the last seq it showed', { timeout: 240000 }, () => withDetachedTask(
  [
    { tool_calls: [{ id: 'call_w', name: 'write_file', arguments: { path: 'after.txt', content: 'kept\n' } }] },
    { content: 'written after the restart' },
  ],
  'write it',
  async ({ sid, client, work }) => {
    let asked = 0;
    let firstAsked;
    const asking = new Promise((resolve) => (firstAsked = resolve));
    // The first bridge never answers (it dies first); the re-attached one answers the approval the daemon re-sends.
    client.setApprovalHandler((params) => (++asked === 1 ? (firstAsked(params), new Promise(() => undefined)) : Promise.resolve('allowOnce')));
    const seqs = new Map();
    const attached = new Set();
    const shown = [];
    client.onUpdate((p) => { // the sidebar's filter (provider.ts)
      const last = seqs.get(p.sessionId);
      if (last !== undefined && p.seq <= last) return;
      seqs.set(p.sessionId, p.seq);
      shown.push(p);
    });
    const updates = collectUpdates(client);
    await client.start();
    await client.request('attachSession', { sessionId: sid, sinceSeq: 0 });
    attached.add(sid);
    await asking;
    const before = seqs.get(sid);
    assert.ok(before > 1, 'the earlier updates were shown');

    await client.restart();
    const again = lib.afterRestart(seqs, attached, sid);
    assert.equal(again, sid);
    assert.equal(lib.afterRestart(new Map([['other', 3]]), attached, 'other'), undefined, 'a session not attached is not');
    const r = await client.request('attachSession', { sessionId: again, sinceSeq: seqs.get(again) });
    assert.equal(r.truncated ?? false, false);
    await updates.waitFor((u) => u.sessionId === sid && u.update.kind === 'turnCompleted', 120000);
    const mine = shown.filter((u) => u.sessionId === sid).map((u) => u.seq);
    assert.deepEqual(mine, mine.map((_, i) => mine[0] + i), 'no gap, no duplicate across the restart');
    assert.ok(mine.indexOf(before) >= 0 && mine.length > mine.indexOf(before) + 1, 'updates after the restart continue the count');
    assert.equal(asked, 2, 'the waiting approval was asked again after the restart');
    assert.equal(fs.readFileSync(path.join(work, 'after.txt'), 'utf8'), 'kept\n');
  },
));
