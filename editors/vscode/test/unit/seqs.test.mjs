// The sidebar's seq bookkeeping across a server restart (src/sidebar/seqs.ts): a restarted `serve` numbers a
// session's updates from 1 again, so the sidebar forgets the last seq of every session it does not follow with
// attachSession; without that, the next turn of the session on screen would be dropped as already shown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { collectUpdates, lib, makeClient, startFakeProvider } from '../support/harness.mjs';

const { forgetUnattached } = lib;

test('only attached sessions keep their last seq', () => {
  const seqs = new Map([['a', 7], ['b', 3]]);
  forgetUnattached(seqs, new Set(['b']));
  assert.deepEqual([...seqs], [['b', 3]]);
});

test('a restarted server numbers the same session from 1 again: the filter the sidebar applies shows its turn', { timeout: 120000 }, async (t) => {
  const provider = await startFakeProvider();
  const { client } = makeClient(provider);
  t.after(() => (client.stop(), provider.stop()));
  await client.start();
  const seqs = new Map();
  const attached = new Set();
  const shown = [];
  const updates = collectUpdates(client);
  client.onUpdate((p) => { // the sidebar's filter (provider.ts)
    const last = seqs.get(p.sessionId);
    if (last !== undefined && p.seq <= last) return;
    seqs.set(p.sessionId, p.seq);
    shown.push(p);
  });
  client.onRestart(() => forgetUnattached(seqs, attached));
  await provider.push([{ content: 'first reply' }, { content: 'second reply' }]);
  const { sessionId } = await client.request('createSession', { cwd: process.cwd() });
  await client.request('submitTurn', { sessionId, text: 'one' });
  const before = seqs.get(sessionId);
  assert.ok(before > 1);
  await client.restart();
  forgetUnattached(seqs, attached); // as the sidebar does when its client is replaced or restarted
  await client.request('submitTurn', { sessionId, text: 'two' });
  await updates.waitFor((u) => u.update.kind === 'assistantMessage' && u.update.content === 'second reply');
  const again = updates.updates.filter((u) => u.update.kind === 'userMessage' && u.update.text === 'two');
  assert.ok(again[0].seq <= before, `the new server numbered from ${again[0].seq}, after ${before}`);
  assert.ok(shown.some((u) => u.update.kind === 'assistantMessage' && u.update.content === 'second reply'));
});
