// The RPC layer (src/rpc, no vscode import) under plain Node, against the repo's real server and the model double.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, collectUpdates, lib, makeClient, startFakeProvider, tempDir } from '../support/harness.mjs';

const { RpcError, splitCommandLine, buildWebviewHtml, METHOD_NAMES } = lib;

test('splitCommandLine splits like a shell for plain words and quotes', () => {
  assert.deepEqual(splitCommandLine('threadline serve'), ['threadline', 'serve']);
  assert.deepEqual(splitCommandLine('  "/opt/my tools/threadline"  serve --log-level \'DEBUG\' '), ['/opt/my tools/threadline', 'serve', '--log-level', 'DEBUG']);
  assert.deepEqual(splitCommandLine('a\\ b ""'), ['a b', '']);
  assert.throws(() => splitCommandLine('"open'), /unterminated/);
});

test('webview HTML has a strict CSP: nonce-only scripts, no inline styles, nothing remote', () => {
  const html = buildWebviewHtml({ cspSource: 'vscode-resource:', scriptUri: 'x.js', styleUri: 'x.css', nonce: 'N0NCE', view: 'sidebar', title: 'T' });
  const csp = /Content-Security-Policy" content="([^"]+)"/.exec(html)[1];
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-N0NCE'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.equal((html.match(/<script/g) || []).length, 1);
  assert.match(html, /<script nonce="N0NCE" src="x.js">/);
});

test('the methods the client calls are in protocol/schema.json', () => {
  const schema = JSON.parse(fs.readFileSync(path.join(REPO, 'protocol/schema.json'), 'utf8'));
  for (const m of METHOD_NAMES) assert.ok(schema.methods[m], `${m} missing from schema`);
  assert.ok(schema.notifications.sessionUpdate && schema.serverRequests.requestApproval);
});

describe('against the real server', () => {
  let provider;
  before(async () => (provider = await startFakeProvider()));
  after(() => provider.stop());

  test('initialize, then a full streamed turn with reasoning, usage and a transcript', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    const seen = collectUpdates(client);
    await client.start();
    assert.equal(client.state, 'running');
    assert.ok(client.serverInfo.methods.includes('submitTurn'));
    const cwd = tempDir('tl-ws-');
    const { sessionId } = await client.request('createSession', { cwd, title: 'unit' });
    await provider.push([{ content: 'Hello **there**, all done.', reasoning: 'Think first.', chunks: 4 }]);
    const result = await client.request('submitTurn', { sessionId, text: 'say hello' });
    assert.equal(result.stopReason, 'endTurn');
    assert.ok(result.usage.contextTokens > 0);
    const kinds = seen.kinds();
    for (const k of ['turnStarted', 'userMessage', 'reasoningDelta', 'assistantDelta', 'usage', 'assistantMessage', 'turnCompleted']) {
      assert.ok(kinds.includes(k), `missing ${k} in ${kinds}`);
    }
    const streamed = seen.updates.filter((u) => u.update.kind === 'assistantDelta').map((u) => u.update.text).join('');
    assert.equal(streamed, 'Hello **there**, all done.');
    assert.ok(seen.updates.filter((u) => u.update.kind === 'assistantDelta').length >= 2, 'text arrives in several deltas');
    const usage = seen.updates.find((u) => u.update.kind === 'usage').update;
    assert.equal(usage.contextTokens, result.usage.contextTokens);
    const { items } = await client.request('readTranscript', { sessionId });
    assert.deepEqual(items.filter((i) => i.role !== 'system').map((i) => i.role), ['user', 'assistant']);
    const { sessions } = await client.request('listSessions', { cwd });
    assert.equal(sessions[0].sessionId, sessionId);
  });

  test('approvals: reject, allow once, allow always are answered to requestApproval', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    const asked = [];
    const answers = ['reject', 'allowOnce', 'allowAlways'];
    client.setApprovalHandler(async (p) => (asked.push(p), answers.shift()));
    const seen = collectUpdates(client);
    const cwd = tempDir('tl-ws-');
    const { sessionId } = await client.request('createSession', { cwd });
    const write = (id, file) => ({ tool_calls: [{ id, name: 'write_file', arguments: { path: file, content: `${id}\n` } }] });
    await provider.push([write('call_a', 'a.txt'), write('call_b', 'b.txt'), write('call_c', 'c.txt'), write('call_d', 'd.txt'), { content: 'Wrote files.' }]);
    const result = await client.request('submitTurn', { sessionId, text: 'write four files' });
    assert.equal(result.stopReason, 'endTurn');
    assert.deepEqual(asked.map((p) => p.toolCallId), ['call_a', 'call_b', 'call_c'], 'allowAlways stops the asking for write_file');
    assert.equal(asked[0].tool, 'write_file');
    assert.deepEqual(asked[0].options, ['allowOnce', 'allowAlways', 'reject']);
    assert.ok(asked[0].title && typeof asked[0].detail === 'string');
    const status = Object.fromEntries(seen.updates.filter((u) => u.update.kind === 'toolResult').map((u) => [u.update.toolCallId, u.update.status]));
    assert.deepEqual(status, { call_a: 'denied', call_b: 'ok', call_c: 'ok', call_d: 'ok' });
    assert.ok(!fs.existsSync(path.join(cwd, 'a.txt')));
    assert.equal(fs.readFileSync(path.join(cwd, 'd.txt'), 'utf8'), 'call_d\n');
  });

  test('cancelTurn stops a streaming turn; submitTurn resolves with stopReason cancelled', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    const seen = collectUpdates(client);
    const { sessionId } = await client.request('createSession', { cwd: tempDir('tl-ws-') });
    await provider.push([{ content: 'word '.repeat(200), chunks: 100, chunk_delay: 0.1 }]);
    const turn = client.request('submitTurn', { sessionId, text: 'talk slowly' });
    await seen.waitFor((u) => u.update.kind === 'assistantDelta');
    const t0 = Date.now();
    assert.deepEqual(await client.request('cancelTurn', { sessionId }), { cancelled: true });
    const result = await turn;
    assert.equal(result.stopReason, 'cancelled');
    assert.ok(Date.now() - t0 < 5000, 'cancel is prompt');
    assert.equal(seen.updates.at(-1).update.kind, 'turnCompleted');
    assert.equal(seen.updates.at(-1).update.stopReason, 'cancelled');
  });

  test('cancelTurn while an approval is pending ends the turn as cancelled', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    let asked;
    // Never answered: the person walked away. (The server does not send $/cancelRequest for it; the
    // extension withdraws open approval cards itself when turnCompleted arrives.)
    client.setApprovalHandler((p) => new Promise(() => (asked = p.toolCallId)));
    const seen = collectUpdates(client);
    const { sessionId } = await client.request('createSession', { cwd: tempDir('tl-ws-') });
    await provider.push([{ tool_calls: [{ id: 'call_w', name: 'run_command', arguments: { command: 'echo hi' } }] }]);
    const turn = client.request('submitTurn', { sessionId, text: 'run it' });
    await seen.waitFor((u) => u.update.kind === 'toolCall');
    for (let i = 0; i < 50 && !asked; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(asked, 'call_w');
    await client.request('cancelTurn', { sessionId });
    assert.equal((await turn).stopReason, 'cancelled');
    const done = await seen.waitFor((u) => u.update.kind === 'turnCompleted');
    assert.equal(done.update.stopReason, 'cancelled');
  });

  test('the server dying mid-turn: the turn fails, the client says so and restarts, stored data survives', async (t) => {
    const { client, logs } = makeClient(provider, { restartDelayMs: 100 });
    t.after(() => client.stop());
    const seen = collectUpdates(client);
    const { sessionId } = await client.request('createSession', { cwd: tempDir('tl-ws-'), title: 'survivor' });
    await provider.push([{ content: 'slow '.repeat(100), chunks: 50, chunk_delay: 0.2 }]);
    const turn = client.request('submitTurn', { sessionId, text: 'long answer' });
    await seen.waitFor((u) => u.update.kind === 'assistantDelta');
    const crashed = new Promise((r) => client.onCrash(r));
    const restarted = new Promise((r) => client.onRestart(r));
    const oldPid = client.pid;
    process.kill(oldPid, 'SIGKILL');
    await assert.rejects(turn, (e) => e instanceof RpcError);
    const info = await crashed;
    assert.equal(info.signal, 'SIGKILL');
    assert.equal(info.willRestart, true);
    await restarted;
    assert.equal(client.state, 'running');
    assert.notEqual(client.pid, oldPid);
    const { sessions } = await client.request('listSessions', {});
    assert.ok(sessions.some((s) => s.sessionId === sessionId && s.title === 'survivor'));
    await provider.push([{ content: 'Back again.' }]);
    assert.equal((await client.request('submitTurn', { sessionId, text: 'again' })).stopReason, 'endTurn');
    assert.ok(logs.some((l) => /exited unexpectedly/.test(l)));
  });

  test('restarts are bounded: a server that keeps dying is left crashed', async (t) => {
    const { client } = makeClient(provider, { maxRestarts: 1, restartDelayMs: 50 });
    t.after(() => client.stop());
    await client.start();
    const crashes = [];
    client.onCrash((c) => crashes.push(c));
    const restarted = new Promise((r) => client.onRestart(r));
    process.kill(client.pid, 'SIGKILL');
    await restarted;
    const second = new Promise((r) => client.onCrash(r));
    process.kill(client.pid, 'SIGKILL');
    await second;
    assert.deepEqual(crashes.map((c) => c.willRestart), [true, false]);
    assert.equal(client.state, 'crashed');
  });

  test('errors keep their JSON-RPC code and data.code', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    await assert.rejects(client.request('readTranscript', { sessionId: 'ses_nope' }),
      (e) => e instanceof RpcError && e.code === -32602 && e.dataCode === 'SessionNotFound');
  });

  test('a command that cannot start rejects with SpawnFailed and does not loop', async () => {
    const client = new lib.ThreadlineClient({ command: '/nonexistent/threadline serve' });
    await assert.rejects(client.start(), (e) => e.dataCode === 'SpawnFailed' && /nonexistent/.test(e.message));
    assert.equal(client.state, 'crashed');
  });
});

describe('the API key travels in initializationOptions', () => {
  let provider;
  before(async () => (provider = await startFakeProvider(['--api-key', 'sk-test-123'])));
  after(() => provider.stop());

  test('with the key in initializationOptions the model accepts the request; without it the turn fails', async (t) => {
    const { client: good } = makeClient(provider, { initializationOptions: () => ({ provider: { apiKey: 'sk-test-123' }, approvalPolicy: 'ask' }) });
    const { client: bad } = makeClient(provider);
    t.after(() => Promise.all([good.stop(), bad.stop()]));
    await provider.push([{ content: 'authorised' }]);
    const s1 = await good.request('createSession', { cwd: tempDir('tl-ws-') });
    const ok = await good.request('submitTurn', { sessionId: s1.sessionId, text: 'hi' });
    assert.equal(ok.stopReason, 'endTurn');
    const s2 = await bad.request('createSession', { cwd: tempDir('tl-ws-') });
    const failed = await bad.request('submitTurn', { sessionId: s2.sessionId, text: 'hi' });
    assert.equal(failed.stopReason, 'error');
    assert.ok(failed.error?.message);
  });
});
