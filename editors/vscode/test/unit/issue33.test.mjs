// Issue 33 in the VS Code sidebar (the pure half under plain Node, fed by the repo's real server and the model
// double): the plan checklist from a real `plan` update, `/` completion from a real listCommands, and the context
// panel's stacked bar from a real getContextView breakdown.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { collectUpdates, lib, makeClient, startFakeProvider, tempDir } from '../support/harness.mjs';

const { breakdownSegments, commandLabel, completeCommand, planItems, planProgress, slashMatches } = lib;

test('`/` completion offers matching commands only while a name is being typed', () => {
  const commands = [
    { name: 'review', description: 'Review a file', source: 'project', argumentHint: '<path>' },
    { name: 'compact', description: 'Compact now', source: 'builtin', argumentHint: '[focus]' },
    { name: 'context', description: 'What fills the context', source: 'builtin' },
  ];
  assert.deepEqual(slashMatches(commands, '/').map((c) => c.name), ['compact', 'context', 'review']);
  assert.deepEqual(slashMatches(commands, '/co').map((c) => c.name), ['compact', 'context']);
  assert.deepEqual(slashMatches(commands, '/review a.py'), []); // arguments are being typed
  assert.deepEqual(slashMatches(commands, 'use /co'), []);
  assert.deepEqual(slashMatches(commands, '/usr/bin'), []);
  assert.equal(completeCommand(commands[0]), '/review ');
  assert.equal(commandLabel(commands[0]), '/review <path> — Review a file (project)');
});

describe('against the real server', () => {
  let provider;
  before(async () => (provider = await startFakeProvider()));
  after(() => provider.stop());

  test('listCommands feeds the completion; a plan update becomes the checklist; the breakdown the bar', async (t) => {
    const { client } = makeClient(provider, { contextWindow: 8000 });
    t.after(() => client.stop());
    const seen = collectUpdates(client);
    await client.start();
    const cwd = tempDir('tl-ws-');
    fs.mkdirSync(path.join(cwd, '.threadline', 'commands'), { recursive: true });
    fs.writeFileSync(path.join(cwd, '.threadline', 'commands', 'review.md'), '---\ndescription: Review a file\nargument-hint: <path>\n---\nReview $ARGUMENTS\n');
    const { sessionId } = await client.request('createSession', { cwd });

    const { commands } = await client.request('listCommands', { sessionId });
    assert.deepEqual(slashMatches(commands, '/r').map(commandLabel), ['/review <path> — Review a file (project)']);

    const plan = [
      { step: 'Read the parser', status: 'completed' },
      { step: 'Fix the tokenizer', status: 'in_progress' },
      { step: 'Run the tests', status: 'pending' },
    ];
    await provider.push([{ tool_calls: [{ id: 'p1', name: 'update_plan', arguments: { plan } }] }, { content: 'planned' }]);
    await client.request('submitTurn', { sessionId, text: '/review src/parser.py' });
    const update = await seen.waitFor((u) => u.update.kind === 'plan');
    assert.deepEqual(planItems(update.update.entries).map((i) => `${i.mark} ${i.step}`),
      ['☑ Read the parser', '◐ Fix the tokenizer', '☐ Run the tests']);
    assert.equal(planProgress(update.update.entries), '1 of 3 done · now: Fix the tokenizer');
    const typed = seen.updates.find((u) => u.update.kind === 'userMessage').update;
    assert.deepEqual([typed.text, typed.typed], ['Review src/parser.py', '/review src/parser.py']);

    const view = await client.request('getContextView', { sessionId });
    assert.deepEqual(view.plan.entries, plan);
    const segments = breakdownSegments(view.breakdown);
    assert.deepEqual(segments.map((s) => s.key),
      ['systemPrompt', 'projectContext', 'toolDefinitions', 'summary', 'messages', 'placeholders', 'free']);
    assert.equal(segments.reduce((sum, s) => sum + s.tokens, 0), view.contextWindowTokens);
    assert.ok(Math.abs(segments.reduce((sum, s) => sum + s.percent, 0) - 100) < 1e-9);
    assert.equal(segments.find((s) => s.key === 'toolDefinitions').tokens, view.reservedTokens);
  });
});
