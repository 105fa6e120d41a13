// The sidebar and context-view webviews in headless Debian Chromium: the real bundle and stylesheet under the
// real CSP, a stubbed acquireVsCodeApi, and the protocol messages recorded from the real server replayed in.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { EXT_DIR, lib } from '../support/harness.mjs';
import { INJECTION } from '../support/scenario.mjs';
import { DARK } from './theme.mjs';

const SHOTS = process.env.SHOT_DIR || path.join(EXT_DIR, 'test/screenshots/run');
fs.mkdirSync(SHOTS, { recursive: true });
const recorded = JSON.parse(fs.readFileSync(path.join(EXT_DIR, 'test/fixtures/recorded-session.json'), 'utf8'));

// Serve the bundle, the stylesheet and the page, like webview resources from one origin.
const files = { '/webview.js': path.join(EXT_DIR, 'dist/webview.js'), '/webview.css': path.join(EXT_DIR, 'media/webview.css') };
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (files[url.pathname]) {
    res.writeHead(200, { 'content-type': url.pathname.endsWith('.js') ? 'text/javascript' : 'text/css' });
    return fs.createReadStream(files[url.pathname]).pipe(res);
  }
  const view = url.searchParams.get('view') === 'contextView' ? 'contextView' : 'sidebar';
  const origin = `http://127.0.0.1:${server.address().port}`;
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(lib.buildWebviewHtml({ cspSource: origin, scriptUri: `${origin}/webview.js`, styleUri: `${origin}/webview.css`, nonce: lib.makeNonce(), view, title: 'test' }));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const failures = [];
const step = async (name, fn) => {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (err) {
    failures.push(name);
    console.log(`not ok - ${name}\n  ${String(err.stack || err).split('\n').slice(0, 4).join('\n  ')}`);
  }
};

async function openPage(view) {
  const page = await browser.newPage({ viewport: view === 'sidebar' ? { width: 420, height: 900 } : { width: 1100, height: 800 } });
  page.on('pageerror', (e) => failures.push(`page error: ${e.message}`));
  await page.addInitScript((theme) => {
    window.__posted = [];
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), getState: () => undefined, setState: () => {} });
    const apply = () => { for (const [k, v] of Object.entries(theme)) document.documentElement.style.setProperty(k, v); };
    if (document.documentElement) apply(); else document.addEventListener('DOMContentLoaded', apply);
  }, DARK);
  await page.goto(`${base}?view=${view}`);
  await page.waitForFunction(() => window.__posted.some((m) => m.type === 'ready'));
  return page;
}
const send = (page, msg) => page.evaluate((m) => window.postMessage(m, '*'), msg);
const posted = (page) => page.evaluate(() => window.__posted);
const settle = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

try {
  const page = await openPage('sidebar');
  const msgs = [...recorded.messages];
  const upTo = async (pred) => {
    while (msgs.length) {
      const m = msgs.shift();
      if (m.type === 'approvalClosed') continue; // the test answers approvals by clicking
      await send(page, m);
      if (pred(m)) break;
    }
    await settle(page);
  };
  const isKind = (k, extra = () => true) => (m) => m.type === 'update' && m.params.update.kind === k && extra(m.params.update);

  await step('first turn streams markdown, reasoning folded, a tool card with status', async () => {
    await upTo(isKind('turnCompleted'));
    const text = await page.locator('.msg.assistant .markdown').last().innerText();
    assert.match(text, /Overview/);
    assert.equal(await page.locator('.msg.assistant h2', { hasText: 'Overview' }).count(), 1, 'markdown heading rendered');
    assert.equal(await page.locator('.msg.assistant pre code').count(), 1, 'code block rendered');
    assert.equal(await page.locator('details.reasoning').first().getAttribute('open'), null, 'reasoning collapsed');
    assert.equal(await page.locator('.tool-card[data-tool-call="call_ls"] .tool-status').innerText(), 'ok');
    assert.match(await page.locator('.tool-card[data-tool-call="call_ls"] .tool-args').textContent(), /"path": "."/);
    await page.screenshot({ path: path.join(SHOTS, 'webview-1-chat.png') });
  });

  await step('model output cannot inject script or markup; bad links are not links', async () => {
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.locator('#log script, #log img').count(), 0);
    assert.ok((await page.locator('#log').innerText()).includes('<script>window.__pwned = 1</script>'), 'shown as text');
    assert.ok(INJECTION.includes('onerror'));
    assert.equal(await page.locator('#log a[href^="javascript:"]').count(), 0);
    assert.equal(await page.locator('#log a[href="https://example.com/docs"]').count(), 1);
  });

  await step('an approval shows inline with three choices; clicking answers requestApproval', async () => {
    await upTo((m) => m.type === 'approval');
    const card = page.locator('.approval').first();
    await card.waitFor();
    assert.deepEqual(await card.locator('button').allInnerTexts(), ['Allow once', 'Allow always', 'Reject']);
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Allow once', 'focus moves to the first choice');
    await page.screenshot({ path: path.join(SHOTS, 'webview-2-approval.png') });
    await page.keyboard.press('Enter'); // keyboard-usable
    const answer = (await posted(page)).find((m) => m.type === 'approve');
    assert.deepEqual(answer, { type: 'approve', requestId: 'a1', decision: 'allowOnce' });
    assert.match(await card.innerText(), /Allowed once/);
  });

  await step('a long command result folds into the card with an artifact link that opens the artifact', async () => {
    await upTo((m) => m.type === 'approval');
    await page.locator('.approval').last().locator('button', { hasText: 'Allow once' }).click();
    await upTo(isKind('turnCompleted'));
    const card = page.locator('.tool-card[data-tool-call="call_report"]');
    assert.equal(await card.locator('.tool-status').innerText(), 'ok');
    await card.locator('summary').first().click();
    await card.locator('.tool-output > summary').click();
    const link = card.locator('.artifact-link');
    assert.match(await link.innerText(), /Open artifact artifact-\w+ \(168\.\d KB, 3,002 lines\)/);
    await card.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'webview-3-tool-card.png') });
    await link.click();
    assert.ok((await posted(page)).some((m) => m.type === 'openArtifact' && m.artifactId.startsWith('artifact-')));
  });

  await step('the meter shows the last request (not cumulative) and visibly drops on contextCompacted', async () => {
    const compactMsg = recorded.messages.find(isKind('contextCompacted'));
    assert.ok(compactMsg && msgs.includes(compactMsg));
    await upTo(() => msgs[0] === compactMsg);
    const before = Number(await page.locator('#meter').getAttribute('data-tokens'));
    const lastUsage = recorded.messages.slice(0, recorded.messages.indexOf(compactMsg)).filter(isKind('usage')).pop().params.update;
    assert.equal(before, lastUsage.contextTokens, 'meter = last request contextTokens');
    assert.ok(before < lastUsage.totals.inputTokens, 'and not the cumulative input');
    // contextCompacting, as the server sends it before this compaction's work (the fixture predates it): the meter
    // says it is compacting (a state, not a log entry) until the contextCompacted that follows.
    const entries = await page.locator('#log > *').count();
    const { beforeTokens } = compactMsg.params.update;
    await send(page, { ...compactMsg, params: { ...compactMsg.params, update: { kind: 'contextCompacting', trigger: 'auto', beforeTokens } } });
    await settle(page);
    assert.match(await page.locator('#meter .meter-label').innerText(), /^Compacting the context \([\d.,]+k? tokens\)…$/);
    assert.ok(await page.locator('#meter.compacting').count(), 'the meter is marked compacting');
    assert.equal(await page.locator('#log > *').count(), entries, 'no log entry for a compaction that has only started');
    await upTo(isKind('contextCompacted'));
    assert.equal(await page.locator('#meter.compacting').count(), 0, 'done: the meter no longer says compacting');
    assert.doesNotMatch(await page.locator('#meter .meter-label').innerText(), /Compacting/);
    const compacted = compactMsg.params.update;
    const after = Number(await page.locator('#meter').getAttribute('data-tokens'));
    assert.equal(after, compacted.afterTokens);
    assert.ok(after < before, `meter dropped ${before} -> ${after}`);
    const notice = page.locator('.notice.compaction').last();
    assert.match(await notice.innerText(), new RegExp(`${compacted.beforeTokens.toLocaleString('en-US')} → ${compacted.afterTokens.toLocaleString('en-US')} tokens`));
    await notice.locator('summary').click();
    assert.match(await notice.locator('pre').innerText(), /placeholder|summary|compacted/i);
    await upTo(() => false);
    await notice.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'webview-4-compaction-meter.png') });
  });

  await step('B-CACHE-5: the meter shows the cached share of the last request, only when the provider reports one', async () => {
    const last = recorded.messages.filter(isKind('usage')).pop();
    const sid = last.params.sessionId;
    const usage = { kind: 'usage', contextTokens: 1234, contextWindowTokens: 64000, inputTokens: 1234, outputTokens: 5 };
    await send(page, { type: 'update', params: { sessionId: sid, update: { ...usage, cachedInputTokens: 520 } } });
    await settle(page);
    assert.equal(await page.locator('#meter').getAttribute('data-cached'), '42% cached');
    assert.match(await page.locator('#meter .meter-label').innerText(), /1,234 \/ 64,000 tokens \(2%\) · 42% cached$/);
    await send(page, { type: 'update', params: { sessionId: sid, update: usage } });
    await settle(page);
    assert.equal(await page.locator('#meter').getAttribute('data-cached'), null);
    assert.doesNotMatch(await page.locator('#meter .meter-label').innerText(), /cached/);
  });

  await step('the session cost sits next to the meter once a priced call reports it, and stays until the next one', async () => {
    const last = recorded.messages.filter(isKind('usage')).pop();
    const sid = last.params.sessionId;
    const usage = { kind: 'usage', contextTokens: 1234, contextWindowTokens: 64000, inputTokens: 1234, outputTokens: 5 };
    const totals = { inputTokens: 5000, outputTokens: 40, cachedInputTokens: 520, cacheWriteTokens: 0 };
    await send(page, { type: 'update', params: { sessionId: sid, update: { ...usage, cachedInputTokens: 520, costUsd: 0.0041,
      totals: { ...totals, costUsd: 0.012345 } } } });
    await settle(page);
    assert.equal(await page.locator('#meter').getAttribute('data-cost'), '$0.0123');
    assert.match(await page.locator('#meter .meter-label').innerText(), /\(2%\) · 42% cached · \$0\.0123$/);
    await send(page, { type: 'update', params: { sessionId: sid, update: { ...usage, totals } } });
    await settle(page);
    assert.match(await page.locator('#meter .meter-label').innerText(), /tokens \(2%\) · \$0\.0123$/);
  });

  await step('keyboard: Enter submits, Escape cancels the running turn', async () => {
    await page.locator('#input').focus();
    await page.keyboard.type('one more thing');
    await page.keyboard.press('Enter');
    assert.ok((await posted(page)).some((m) => m.type === 'submit' && m.text === 'one more thing'));
    assert.equal(await page.locator('#cancel').isDisabled(), false);
    await page.keyboard.press('Escape');
    assert.ok((await posted(page)).some((m) => m.type === 'cancel'));
  });

  await step('MCP servers: a strip with each server and its state, updated by mcpServerStatus', async () => {
    const sid = recorded.messages.filter(isKind('usage')).pop().params.sessionId;
    await send(page, { type: 'mcpServers', servers: [
      { name: 'time', origin: 'user', transport: 'stdio', state: 'ready', commandLine: 'uvx mcp-server-time',
        tools: [{ name: 'get_current_time', modelName: 'mcp__time__get_current_time' }] },
      { name: 'proj', origin: 'project', transport: 'stdio', state: 'needsApproval', commandLine: 'node s.js', tools: [] }] });
    const chip = page.locator('#mcp-servers .mcp-server[data-server="time"]');
    await chip.waitFor();
    assert.equal(await chip.innerText(), 'time: ready');
    assert.match(await chip.getAttribute('title'), /1 tools/);
    await send(page, { type: 'update', params: { sessionId: sid, update: { kind: 'mcpServerStatus', name: 'time',
      state: 'failed', transport: 'stdio', reason: 'the server closed the connection; restarting in 0.5 s' } } });
    await page.waitForFunction(() => document.querySelector('#mcp-servers [data-server="time"]')?.dataset.state === 'failed');
    assert.match(await chip.getAttribute('title'), /restarting/);
    await page.locator('#mcp-servers').screenshot({ path: path.join(SHOTS, 'webview-6-mcp-servers.png') });
  });

  await step('issue 18: while a turn runs Enter steers and Queue queues; Compact posts compactSession', async () => {
    assert.equal(await page.locator('#send').innerText(), 'Steer');
    assert.equal(await page.locator('#queue').isHidden(), false);
    await page.locator('#input').focus();
    await page.keyboard.type('keep it short');
    await page.keyboard.press('Enter');
    await page.keyboard.type('then write the docs');
    await page.locator('#queue').click();
    await page.locator('#compact-now').click();
    const sent = await posted(page);
    assert.ok(sent.some((m) => m.type === 'steer' && m.text === 'keep it short'));
    assert.ok(sent.some((m) => m.type === 'queue' && m.text === 'then write the docs'));
    assert.ok(sent.some((m) => m.type === 'compact'));
    const pending = await page.locator('.msg.user.pending .text').allInnerTexts();
    assert.ok(pending.includes('keep it short') && pending.includes('then write the docs'), 'shown until the server confirms them');
  });

  await step('issue 18: diffs in approvals and tool cards, a rewind per edit and per turn', async () => {
    const sid = recorded.messages.filter(isKind('usage')).pop().params.sessionId;
    const diff = { path: 'app.py', oldText: "print('hello')\n", newText: "print('bonjour')\n" };
    const upd = (update) => send(page, { type: 'update', params: { sessionId: sid, turnId: 'turn_d', update } });
    await upd({ kind: 'userMessage', text: 'keep it short', steered: true });
    await upd({ kind: 'toolCall', toolCallId: 'call_d', tool: 'edit_file', arguments: { path: 'app.py' }, title: 'edit_file: app.py' });
    await send(page, { type: 'approval', requestId: 'a9', params: { sessionId: sid, turnId: 'turn_d', toolCallId: 'call_d', tool: 'edit_file',
      title: 'edit_file: app.py', detail: 'app.py\n--- a/app.py', options: ['allowOnce', 'allowAlways', 'reject'], diff } });
    await settle(page);
    assert.equal(await page.locator('.msg.user.steered').count(), 1);
    await page.locator('.approval[data-request="a9"] .diff-link').click();
    await upd({ kind: 'toolResult', toolCallId: 'call_d', tool: 'edit_file', status: 'ok', content: 'Edited app.py', diff });
    await settle(page);
    const card = page.locator('.tool-card[data-tool-call="call_d"]');
    await card.locator('summary').first().click();
    await card.locator('.rewind-edit').click();
    await card.locator('.diff-link').click();
    await send(page, { type: 'update', params: { sessionId: sid, turnId: 'turn_e', update: { kind: 'userMessage', text: 'fresh turn' } } });
    await settle(page);
    await page.locator('.msg.user[data-turn="turn_e"] .turn-menu').click();
    const sent = await posted(page);
    assert.equal(sent.filter((m) => m.type === 'openDiff' && m.toolCallId === 'call_d').length, 2);
    assert.ok(sent.some((m) => m.type === 'rewindEdit' && m.turnId === 'turn_d' && m.toolCallId === 'call_d'));
    assert.ok(sent.some((m) => m.type === 'rewindTurn' && m.turnId === 'turn_e' && m.text === 'fresh turn'));
  });

  await step('issue 15: a model control beside the meter opens the picker and shows the session model', async () => {
    const btn = page.locator('#model-picker');
    assert.equal(await btn.innerText(), 'Model: default');
    const box = await btn.boundingBox(), meter = await page.locator('#meter').boundingBox();
    assert.ok(Math.abs(box.y + box.height / 2 - (meter.y + meter.height / 2)) < meter.height, 'on the meter row');
    await btn.click();
    assert.ok((await posted(page)).some((m) => m.type === 'pickModel'));
    await send(page, { type: 'model', label: 'Model: claude' });
    await settle(page);
    assert.equal(await btn.innerText(), 'Model: claude');
  });

  await step('issues 33, 34: the composer completes `/` commands and @files, shows chips, takes a prefill', async () => {
    const input = page.locator('#input');
    await send(page, { type: 'commands', commands: [
      { name: 'review', description: 'Review a file', source: 'project', argumentHint: '<path>' },
      { name: 'compact', description: 'Compact now', source: 'builtin', argumentHint: '[focus]' },
      { name: 'context', description: 'What fills the context', source: 'builtin' }] });
    await input.fill('');
    await input.focus();
    await page.keyboard.type('/co');
    assert.deepEqual(await page.locator('#slash-suggestions .slash-suggestion').allInnerTexts(),
      ['/compact [focus] — Compact now (builtin)', '/context — What fills the context (builtin)']);
    await page.keyboard.press('Tab');
    assert.equal(await input.inputValue(), '/compact ');
    assert.equal(await page.locator('#slash-suggestions').isHidden(), true, 'hidden once a space follows the name');
    await input.fill('');
    await page.keyboard.type('see @li');
    assert.ok((await posted(page)).some((m) => m.type === 'complete' && m.prefix === 'li'));
    await send(page, { type: 'completions', prefix: 'li', items: ['lib.ts'] });
    await page.locator('#completions .completion', { hasText: 'lib.ts' }).waitFor();
    // the answer for an earlier prefix ("@l") arriving late is stale: the list for "@li" stays shown
    await send(page, { type: 'completions', prefix: 'l', items: ['lib.ts', 'lines.ts'] });
    await settle(page);
    assert.equal(await page.locator('#completions').isHidden(), false, 'a late answer for an older prefix hid the list');
    assert.deepEqual(await page.locator('#completions .completion').allInnerTexts(), ['lib.ts']);
    await page.keyboard.press('Tab');
    assert.equal(await input.inputValue(), 'see @lib.ts ');
    await send(page, { type: 'chips', chips: [{ label: 'lib.ts:1-3', index: 0 }] });
    await page.locator('#chips .chip-remove').click();
    assert.ok((await posted(page)).some((m) => m.type === 'removeChip' && m.index === 0));
    await send(page, { type: 'prefill', text: 'explain lib.ts' });
    await settle(page);
    assert.equal(await input.inputValue(), 'explain lib.ts');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'input');
    await input.fill('');
  });

  await step('no CSP violations and no page errors', async () => {
    assert.deepEqual(await page.evaluate(() => window.__cspViolations), []);
  });

  await step('resume: a session loaded from readTranscript history renders the same pieces', async () => {
    const history = [
      { seq: 1, role: 'system', content: 'system prompt (hidden)', turnId: 'turn_a' },
      { seq: 2, role: 'user', content: 'Earlier question', turnId: 'turn_a' },
      { seq: 3, role: 'assistant', content: 'Earlier *answer*', reasoning: 'old thoughts', turnId: 'turn_a', toolCalls: [
        { id: 'h1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
        { id: 'h2', type: 'function', function: { name: 'read_file', arguments: '{"path":"../b.txt"}' } }] },
      { seq: 4, role: 'tool', toolCallId: 'h1', toolStatus: 'ok', turnId: 'turn_a', content: '[artifact artifact-old] The full output (100 bytes) is stored.' },
      { seq: 5, role: 'tool', toolCallId: 'h2', toolStatus: 'denied', turnId: 'turn_a', content: 'Permission denied: ../b.txt is outside the session folder' },
      { seq: 6, role: 'user', content: 'Later question', turnId: 'turn_b' },
    ];
    // readEvents: a compaction stored during turn_a is shown after that turn's messages (R-OBS-2).
    const events = [{ id: 7, kind: 'contextCompacted', turnId: 'turn_a', createdAt: '2026-12-02T12:00:00Z',
      payload: { mode: 'summarized', beforeTokens: 9000, afterTokens: 2500, summary: '[compressed conversation context] earlier' } }];
    await send(page, { type: 'session', session: { sessionId: 'ses_old', title: 'old' }, history, events });
    await settle(page);
    assert.equal(await page.locator('.msg.user').count(), 2);
    assert.equal(await page.locator('.msg.user[data-turn="turn_b"] .turn-menu').count(), 1, 'each turn has its rewind menu');
    assert.equal(await page.locator('#log', { hasText: 'system prompt' }).count(), 0);
    assert.equal(await page.locator('.msg.assistant em', { hasText: 'answer' }).count(), 1);
    assert.equal(await page.locator('.tool-card[data-tool-call="h1"] [data-artifact="artifact-old"]').count(), 1);
    assert.equal(await page.locator('.tool-card[data-tool-call="h2"] .tool-status.denied').count(), 1);
    const order = await page.locator('#log > *').evaluateAll((els) => els.map((e) => e.classList.contains('compaction') ? 'compaction' : (e.textContent ?? '').includes('Later question') ? 'later' : 'other'));
    assert.deepEqual(order.filter((k) => k !== 'other'), ['compaction', 'later'], 'the compaction sits between its turn and the next');
  });
  await page.close();

  const cv = await openPage('contextView');
  await step('context view: mode, tokens vs threshold, each message with role and size, placeholders and summary marked', async () => {
    await send(cv, { type: 'contextView', view: recorded.contextView, sessionTitle: recorded.sessionId });
    await cv.locator('.cv-table').waitFor();
    const v = recorded.contextView;
    assert.equal(await cv.locator('#cv-mode').innerText(), v.mode);
    assert.match(await cv.locator('#cv-tokens').innerText(), new RegExp(`threshold ${v.thresholdTokens.toLocaleString('en-US')}`));
    assert.equal(await cv.locator('.cv-row').count(), v.messages.length);
    if (v.compactedToolOutputs) assert.ok(await cv.locator('.cv-row .tag.placeholder').count() >= 1);
    await cv.locator('.cv-row.placeholder summary').first().click().catch(() => {});
    await cv.screenshot({ path: path.join(SHOTS, 'webview-5-context-view.png'), fullPage: true });
    // The summary marking, on a fallback-mode view.
    const summary = 'Goals: finish the report.';
    await send(cv, { type: 'contextView', view: { ...v, mode: 'fallback', summary, messages: [{ role: 'system', content: `[compressed conversation context]\n${summary}` }, ...v.messages.slice(-2)] } });
    await cv.locator('.cv-row.summary').waitFor();
    assert.equal(await cv.locator('#cv-mode').innerText(), 'fallback');
  });
  await cv.close();
} finally {
  await browser.close();
  server.close();
}
if (failures.length) {
  console.log(`webview: ${failures.length} failed: ${failures.join('; ')}`);
  process.exit(1);
}
console.log(`webview: all passed; screenshots in ${SHOTS}`);
