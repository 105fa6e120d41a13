// The "Background Processes" quick pick (issue 44): running processes first, each with its state and command.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

test('the Background Processes pick lists running processes first and says how the others ended', () => {
  const items = lib.processPickItems([
    { processId: 'bg-a', pid: 10, command: 'npm run dev', status: 'stopped', exitCode: -15, startedAt: '2026-12-05T09:00:00Z' },
    { processId: 'bg-b', pid: 11, command: 'python3 -m http.server 8000', status: 'running', startedAt: '2026-12-05T09:01:00Z' },
    { processId: 'bg-c', pid: 12, command: 'x'.repeat(200), status: 'exited', exitCode: 1, startedAt: '2026-12-05T09:02:00Z' },
  ]);
  assert.deepEqual(items.map((i) => [i.processId, i.running, i.description]), [
    ['bg-b', true, 'running, pid 11'], ['bg-c', false, 'exited (exit code 1)'], ['bg-a', false, 'stopped (exit code -15)'],
  ]);
  assert.equal(items[1].detail.length, 120);
});
