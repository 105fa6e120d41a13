// B-SUB-1: a subagent's updates folded into the progress its card inside the parent's task card shows
// (src/webview/subagents.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

const { childProgress, childSummary } = lib;

test('B-SUB-1: the child card lists its tool calls, their failures, its tokens and how it ended', () => {
  const updates = [
    { kind: 'turnStarted' },
    { kind: 'usage', inputTokens: 1200 },
    { kind: 'toolCall', toolCallId: 'c1', tool: 'read_file', title: 'read_file: big.txt' },
    { kind: 'toolResult', toolCallId: 'c1', tool: 'read_file', status: 'ok', content: 'x' },
    { kind: 'toolCall', toolCallId: 'c2', tool: 'run_command', title: 'run_command: make' },
    { kind: 'toolResult', toolCallId: 'c2', tool: 'run_command', status: 'denied', content: 'no' },
    { kind: 'usage', inputTokens: 300 },
  ];
  let p;
  for (const u of updates) p = childProgress(p, 'ses_child', u);
  assert.equal(p.childSessionId, 'ses_child');
  assert.deepEqual(p.lines, ['read_file: big.txt', 'run_command: make', '  run_command: denied']);
  assert.equal(childSummary(p), 'Subagent · running · 2 steps · 1500 tokens read');
  const done = childProgress(p, 'ses_child', { kind: 'turnCompleted', stopReason: 'endTurn' });
  assert.equal(done.state, 'done');
  assert.equal(p.state, 'running'); // the fold never changes what it was given
  assert.equal(childProgress(p, 'ses_child', { kind: 'turnCompleted', stopReason: 'cancelled' }).state, 'cancelled');
  assert.equal(childProgress(p, 'ses_child', { kind: 'turnCompleted', stopReason: 'error' }).state, 'failed');
});
