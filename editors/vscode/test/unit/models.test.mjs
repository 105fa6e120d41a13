// The model picker (issue 15): its items from listModels (name, provider, window, prices) and what a pick does
// (updateSession, or createSession's model), against the real server with named models in config.toml.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { collectUpdates, lib, makeClient, startFakeProvider, tempDir } from '../support/harness.mjs';

const { modelButtonLabel, modelPickItems, priceText, windowText } = lib;

const CONFIG = `
[models.small]
model = "small-chat"
context_window_tokens = 9000
price = { input = 1.0, output = 2.0 }

[models.big]
model = "deepseek-chat"
context_window_tokens = 64000
`;

test('prices read per million tokens; cached and cache-write rates only when the model has them', () => {
  assert.equal(priceText({ input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 }),
    '$3.00 in · $0.30 cached · $3.75 cache write · $15.00 out per M tokens');
  assert.equal(priceText({ input: 0.27, output: 1.1, cachedInput: 0.07 }), '$0.27 in · $0.07 cached · $1.10 out per M tokens');
  assert.equal(priceText(undefined), 'no price known');
  assert.equal(windowText(200_000), '200k window');
  assert.equal(windowText(1_000_000), '1.0M window');
});

test('the picker lists the default first, then the named models; the current one is marked', () => {
  const items = modelPickItems({
    default: { name: null, provider: 'openai', model: 'fake-model', contextWindowTokens: 128000 },
    models: [{ name: 'claude', provider: 'anthropic', model: 'claude-sonnet-4-5', contextWindowTokens: 200000,
      price: { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 } }],
  }, 'claude');
  assert.deepEqual(items.map((i) => [i.label, i.name, i.picked]), [['Default model', null, false], ['claude', 'claude', true]]);
  assert.equal(items[1].description, 'anthropic · claude-sonnet-4-5');
  assert.equal(items[1].detail, '200k window · $3.00 in · $0.30 cached · $3.75 cache write · $15.00 out per M tokens');
  assert.equal(items[0].detail, '128k window · no price known');
  assert.equal(modelButtonLabel('claude'), 'Model: claude');
  assert.equal(modelButtonLabel(null), 'Model: default');
});

describe('against the real server', () => {
  let provider;
  before(async () => (provider = await startFakeProvider()));
  after(() => provider.stop());

  test('a pick from listModels switches the session with updateSession; the next call uses its window', async (t) => {
    const { client } = makeClient(provider, { configToml: CONFIG });
    t.after(() => client.stop());
    const seen = collectUpdates(client);
    await client.start();
    const items = modelPickItems(await client.request('listModels', {}), 'small');
    assert.deepEqual(items.map((i) => i.label), ['Default model', 'small', 'big']);
    assert.equal(items.find((i) => i.picked).detail, '9k window · $1.00 in · $2.00 out per M tokens');

    // no session yet: the pick goes to createSession
    const { sessionId } = await client.request('createSession', { cwd: tempDir('tl-ws-'), model: 'small' });
    const big = items.find((i) => i.name === 'big');
    const r = await client.request('updateSession', { sessionId, model: big.name });
    assert.equal(r.model, 'big');
    assert.equal(r.contextWindowTokens, 64000);
    const { sessions } = await client.request('listSessions', {});
    assert.equal(sessions.find((s) => s.sessionId === sessionId).model, 'big');

    await provider.push([{ content: 'ok' }]);
    await client.request('submitTurn', { sessionId, text: 'hi' });
    const usage = await seen.waitFor((u) => u.update.kind === 'usage');
    assert.equal(usage.update.contextWindowTokens, 64000);
    const requests = await provider.requests();
    assert.equal(requests.at(-1).body.model, 'deepseek-chat');

    const back = await client.request('updateSession', { sessionId, model: items[0].name });
    assert.equal(back.model ?? null, null);
  });
});
