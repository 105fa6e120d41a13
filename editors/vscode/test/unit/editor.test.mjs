// Editor grounding (issue 34) in the RPC layer, under plain Node against the real server: a client given an
// `editor` answerer advertises the capability, the server offers the editor tools and sends editor/* requests
// (0-based positions), the answer reaches the model, and an answerer's error is a clear tool result.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { makeClient, startFakeProvider, tempDir } from '../support/harness.mjs';

const caps = { diagnostics: true, definition: true, references: false, workspaceSymbols: false, settleMs: 0 };

describe('editor grounding against the real server', () => {
  let provider;
  before(async () => (provider = await startFakeProvider()));
  after(() => provider.stop());

  const names = (req) => (req.body.tools ?? []).map((t) => t.function.name);
  const toolText = (req) => req.body.messages.filter((m) => m.role === 'tool').map((m) => m.content);

  test('issue34: advertised tools only; editor/definition answered by the editor reaches the model', async (t) => {
    const asked = [];
    const cwd = tempDir('tl-ws-');
    fs.writeFileSync(path.join(cwd, 'main.ts'), 'import { helper } from "./lib";\nhelper(1);\n');
    fs.writeFileSync(path.join(cwd, 'lib.ts'), 'export function helper(x: number) { return x; }\n');
    const editor = {
      capabilities: () => caps,
      answer: async (method, params) => {
        asked.push([method, params]);
        if (method === 'editor/definition') {
          return { locations: [{ uri: pathToFileURL(path.join(cwd, 'lib.ts')).href, range: { start: { line: 0, character: 16 }, end: { line: 0, character: 22 } } }] };
        }
        throw new Error('no TypeScript server yet');
      },
    };
    const { client } = makeClient(provider, { editor });
    t.after(() => client.stop());
    const { sessionId } = await client.request('createSession', { cwd, title: 'editor' });
    await provider.push([
      { tool_calls: [{ id: 'c1', name: 'find_definition', arguments: { path: 'main.ts', line: 2, column: 1 } }] },
      { tool_calls: [{ id: 'c2', name: 'get_diagnostics', arguments: {} }] },
      { content: 'ok' },
    ]);
    const result = await client.request('submitTurn', { sessionId, text: 'where is helper?' });
    assert.equal(result.stopReason, 'endTurn');
    const requests = (await provider.requests()).filter((r) => r.path.startsWith('/v1/chat'));
    const offered = names(requests[0]);
    assert.ok(offered.includes('find_definition') && offered.includes('get_diagnostics'));
    assert.ok(!offered.includes('find_references') && !offered.includes('workspace_symbols'));
    assert.deepEqual(asked[0], ['editor/definition', { uri: pathToFileURL(path.join(cwd, 'main.ts')).href, position: { line: 1, character: 0 } }]);
    assert.deepEqual(toolText(requests[1]), ['1 definition:\nlib.ts:1:17\n    export function helper(x: number) { return x; }']);
    assert.equal(toolText(requests[2])[1], 'Tool failed: the editor could not answer editor/diagnostics: no TypeScript server yet');
  });

  test('issue34: without an answerer nothing is advertised and no editor tool is offered', async (t) => {
    const { client } = makeClient(provider);
    t.after(() => client.stop());
    const { sessionId } = await client.request('createSession', { cwd: tempDir('tl-ws-'), title: 'plain' });
    await provider.push([{ content: 'hi' }]);
    await client.request('submitTurn', { sessionId, text: 'hello' });
    const last = (await provider.requests()).filter((r) => r.path.startsWith('/v1/chat')).pop();
    assert.ok(!names(last).some((n) => ['get_diagnostics', 'find_definition'].includes(n)));
  });
});
