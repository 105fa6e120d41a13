// Ordering a resumed session (src/webview/history.ts): each turn's stored compactions follow that turn's messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

const { interleaveCompactions, storedDiffs } = lib;

test('R-OBS-2: compactions sit after their turn, every message stays, other events are ignored', () => {
  const history = [
    { seq: 1, role: 'user', content: 'first', turnId: 't1' },
    { seq: 2, role: 'assistant', content: 'a1', turnId: 't1' },
    { seq: 3, role: 'user', content: 'second', turnId: 't2' },
    { seq: 4, role: 'assistant', content: 'a2', turnId: 't2' },
  ];
  const events = [
    { id: 1, kind: 'approvalRequested', turnId: 't1', createdAt: '', payload: {} },
    { id: 2, kind: 'contextCompacted', turnId: 't1', createdAt: '', payload: { mode: 'summarized', beforeTokens: 9, afterTokens: 3, summary: 's1' } },
    { id: 3, kind: 'contextCompacted', turnId: 't2', createdAt: '', payload: { mode: 'microcompacted', beforeTokens: 8, afterTokens: 5, summary: '' } },
  ];
  const order = interleaveCompactions(history, events).map((e) => ('item' in e ? e.item.seq : e.compaction.mode));
  assert.deepEqual(order, [1, 2, 'summarized', 3, 4, 'microcompacted']);
});

test('with no events the history comes back unchanged', () => {
  const history = [{ seq: 1, role: 'user', content: 'x' }];
  assert.deepEqual(interleaveCompactions(history, []), [{ item: history[0] }]);
});

test('issue 18: a resumed session gets each applied edit\'s stored diff by tool call; one kept without texts has none', () => {
  const diff = { path: 'a.txt', oldText: 'one\n', newText: 'two\n' };
  const events = [
    { id: 1, kind: 'fileDiff', turnId: 't1', createdAt: '', payload: { toolCallId: 'c1', tool: 'edit_file', path: 'a.txt', diff } },
    { id: 2, kind: 'fileDiff', turnId: 't1', createdAt: '', payload: { toolCallId: 'c2', tool: 'write_file', path: 'big.txt', note: 'diff not kept' } },
    { id: 3, kind: 'contextCompacted', turnId: 't1', createdAt: '', payload: { mode: 'summarized' } },
  ];
  assert.deepEqual([...storedDiffs(events)], [['c1', diff]]);
});
