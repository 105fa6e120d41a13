// Issue 18 through the extension's RPC layer against the real server: diffs in approvals and tool results,
// listCheckpoints/rewindFiles (as the sidebar's turn menu drives them), steer, queue and compact now.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { collectUpdates, lib, makeClient, startFakeProvider, tempDir } from '../support/harness.mjs';

const { forkSeqBefore, planRewind, rewindDone, turnPickItems } = lib;
const NOTE = 'Changes made by run_command are not recorded and cannot be rewound.';

test('planRewind says what each path would do and counts conflicts', () => {
  const plan = planRewind({ dryRun: true, note: NOTE, files: [
    { path: 'a.txt', status: 'restored', change: 'restored' }, { path: 'new.txt', status: 'restored', change: 'removed' },
    { path: 'b.txt', status: 'conflicted', detail: 'changed' }, { path: 'big.bin', status: 'notRestorable' }] });
  assert.equal(plan.conflicted, 1);
  assert.equal(plan.actionable, 2);
  assert.match(plan.summary, /a\.txt: restore\nnew\.txt: remove \(the turn created it\)\nb\.txt: changed outside Threadline/);
  assert.match(plan.summary, /cannot be rewound\.$/);
  assert.match(planRewind({ files: [], note: NOTE }).summary, /^No file changes were recorded/);
  assert.equal(rewindDone({ files: [{ path: 'a', status: 'restored' }, { path: 'b', status: 'conflicted' }], note: NOTE }),
    `Rewound files: 1 restored, 0 unchanged, 1 conflicted (kept). ${NOTE}`);
  assert.equal(forkSeqBefore({ seq: 7 }), 6);
});

test('the Rewind Files pick lists the newest turn first with the files each changed', () => {
  const items = turnPickItems([
    { turnId: 't1', seq: 3, createdAt: '2026-12-03T10:00:00.123Z', files: [] },
    { turnId: 't2', seq: 9, createdAt: '2026-12-03T10:05:00.000Z', files: [
      { path: 'new.py', change: 'created', restorable: true }, { path: 'big.bin', change: 'modified', restorable: false }] },
  ]);
  assert.deepEqual(items.map((i) => [i.turnId, i.label, i.description]), [
    ['t2', 'Turn at message 9', '2026-12-03 10:05:00'], ['t1', 'Turn at message 3', '2026-12-03 10:00:00']]);
  assert.equal(items[0].detail, '+new.py  ~big.bin (not restorable)');
  assert.equal(items[1].detail, 'no file changes');
});

describe('against the real server', () => {
  let provider;
  before(async () => (provider = await startFakeProvider()));
  after(() => provider.stop());

  test('an edit is reviewed as a diff, then rewound from its turn', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    const seen = collectUpdates(client);
    const asked = [];
    client.setApprovalHandler(async (p) => (asked.push(p), 'allowOnce'));
    await client.start();
    const cwd = tempDir('tl-ws-');
    fs.writeFileSync(path.join(cwd, 'app.py'), "print('hello')\n");
    const { sessionId } = await client.request('createSession', { cwd, approvalPolicy: 'ask' });
    await provider.push([
      { tool_calls: [{ id: 'call_e', name: 'edit_file', arguments: { path: 'app.py', old_string: 'hello', new_string: 'bonjour' } }] },
      { content: 'Done.' }]);
    const { turnId } = await client.request('submitTurn', { sessionId, text: 'French' });
    assert.deepEqual(asked[0].diff, { path: 'app.py', oldText: "print('hello')\n", newText: "print('bonjour')\n" });
    const result = seen.updates.find((u) => u.update.kind === 'toolResult').update;
    assert.deepEqual(result.diff, asked[0].diff);

    const { turns } = await client.request('listCheckpoints', { sessionId });
    assert.equal(turns[0].turnId, turnId);
    assert.deepEqual(turns[0].files.map((f) => [f.path, f.change, f.restorable]), [['app.py', 'modified', true]]);
    const dry = await client.request('rewindFiles', { sessionId, toTurnId: turnId, dryRun: true });
    assert.equal(planRewind(dry).actionable, 1);
    assert.equal(fs.readFileSync(path.join(cwd, 'app.py'), 'utf8'), "print('bonjour')\n");
    const done = await client.request('rewindFiles', { sessionId, toTurnId: turnId });
    assert.deepEqual(done.files.map((f) => f.status), ['restored']);
    assert.equal(fs.readFileSync(path.join(cwd, 'app.py'), 'utf8'), "print('hello')\n");
    const { sessionId: forked } = await client.request('forkSession', { sessionId, atSeq: forkSeqBefore(turns[0]) });
    const { items } = await client.request('readTranscript', { sessionId: forked });
    assert.equal(items.length, 0, 'the fork ends before the turn');
  });

  test('steer reaches the running turn, queue runs after it, compact now', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    const seen = collectUpdates(client);
    await client.start();
    const { sessionId } = await client.request('createSession', { cwd: tempDir('tl-ws-') });
    const chats = async () => (await provider.requests()).filter((r) => r.path.startsWith('/v1/chat')).length;
    const earlier = await chats();
    await provider.push([{ content: 'working', delay: 1 }, { content: 'steered answer' }, { content: 'queued answer' }]);
    const first = client.request('submitTurn', { sessionId, text: 'start' });
    // Steer once the first model call is under way, so it waits for the next one
    for (let i = 0; i < 100 && (await chats()) === earlier; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const steered = await client.request('steerTurn', { sessionId, text: 'shorter please' });
    const queued = client.request('submitTurn', { sessionId, text: 'then this', queue: true });
    const [a, b] = await Promise.all([first, queued]);
    assert.equal(steered.turnId, a.turnId);
    assert.notEqual(a.turnId, b.turnId);
    const { items } = await client.request('readTranscript', { sessionId });
    assert.deepEqual(items.filter((i) => i.role !== 'system').map((i) => i.content),
      ['start', 'working', 'shorter please', 'steered answer', 'then this', 'queued answer']);
    await assert.rejects(client.request('steerTurn', { sessionId, text: 'late' }), (e) => e.dataCode === 'TurnNotRunning');
    const compacted = await client.request('compactSession', { sessionId, focus: 'keep the plan' });
    assert.equal(typeof compacted.compacted, 'boolean');
  });
});
