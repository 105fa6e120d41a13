// The sandbox state beside the policy (B-SBX-1/2) and the mark on an approval that runs outside it (B-SBX-3), with
// the status the real server reports from createSession and updateSession.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lib, makeClient, startFakeProvider, tempDir } from '../support/harness.mjs';

const { outsideSandboxMark, sandboxBadge } = lib;

test('the badge shows the policy and the mode, and warns when the sandbox is not enforced', () => {
  const on = { mode: 'workspace-write', enforced: true, mechanism: 'landlock-v7+userns', network: false };
  assert.deepEqual(sandboxBadge('autoEdit', on), {
    text: 'autoEdit · sandbox: workspace-write', title: 'Commands are confined (landlock-v7+userns, network off)', warn: false });
  const not = { mode: 'workspace-write', enforced: false, mechanism: 'none', network: false, reason: 'no Landlock' };
  const badge = sandboxBadge('auto', not);
  assert.equal(badge.text, 'auto · sandbox: NOT enforced');
  assert.equal(badge.warn, true);
  assert.match(badge.title, /no Landlock\. Every command asks/);
  assert.equal(sandboxBadge('ask', { ...on, mode: 'off', enforced: false }).text, 'ask · sandbox: off');
});

test('an escalation is marked with its reason; an ordinary request is not', () => {
  const base = { sessionId: 's', turnId: 't', toolCallId: 'c', tool: 'run_command', title: 'run_command: ls', detail: 'ls' };
  assert.equal(outsideSandboxMark(base), undefined);
  assert.equal(outsideSandboxMark({ ...base, outsideSandbox: true, reason: 'needs the network' }),
    'Runs outside the sandbox — reason: needs the network');
});

describe('against the real server', () => {
  let provider;
  before(async () => (provider = await startFakeProvider()));
  after(() => provider.stop());

  test('createSession and updateSession report the sandbox the badge shows', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    await client.start();
    const created = await client.request('createSession', { cwd: tempDir('tl-ws-'), sandbox: 'read-only' });
    assert.equal(created.sandbox.mode, 'read-only');
    assert.equal(typeof created.sandbox.enforced, 'boolean');
    const now = await client.request('updateSession', { sessionId: created.sessionId });
    assert.deepEqual(now.sandbox, created.sandbox);
    assert.match(sandboxBadge('ask', now.sandbox).text, /^ask · sandbox: (read-only|NOT enforced)$/);
  });
});
