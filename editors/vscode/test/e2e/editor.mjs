// Editor grounding (issue 34) inside code-server, with VS Code's built-in TypeScript features: a selection added
// with "Add Selection to Threadline", the active file chip and an @-completed mention go with the message; the
// agent edits main.ts into a type error, which VS Code reports and the model's next request contains; a
// find_definition answered by the real TypeScript server. Run: E2E_DRIVER=editor.mjs bash test/e2e/run.sh
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const { CS_URL, FAKE_BASE } = process.env;
const SHOT = process.env.SHOT_DIR;
fs.mkdirSync(SHOT, { recursive: true });
const t0 = Date.now();
const log = (...a) => console.log(`[e2e-editor ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const push = async (items) => {
  const r = await fetch(`${FAKE_BASE}/_control/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) });
  assert.ok(r.ok, `push ${r.status}`);
};
const chatRequests = async () => (await (await fetch(`${FAKE_BASE}/_control/requests`)).json()).filter((r) => r.path.startsWith('/v1/chat'));
const toolTexts = (req) => req.body.messages.filter((m) => m.role === 'tool').map((m) => m.content);

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const shot = (name) => page.screenshot({ path: path.join(SHOT, name) });

async function findFrame(selector, ms = 30000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    for (const fr of page.frames()) {
      try { if (await fr.locator(selector).count()) return fr; } catch { /* detached */ }
    }
    await page.waitForTimeout(250);
  }
  throw new Error(`no frame with ${selector}`);
}
async function palette(command, { focusEditor = true } = {}) {
  if (focusEditor) await page.locator('.part.editor').click(); // a focused webview swallows keys
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget input').waitFor();
  await page.keyboard.type(command);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: command.replace(/^Threadline: /, '') }).first().waitFor();
  await page.keyboard.press('Enter');
}

try {
  await page.goto(CS_URL);
  await page.locator('.monaco-workbench').waitFor({ timeout: 90000 });
  await page.locator('.activitybar .action-item a[aria-label^="Threadline"]').first().click({ timeout: 60000 });
  const chat = await findFrame('#input', 60000);
  await chat.locator('#banner').waitFor({ state: 'hidden', timeout: 30000 });
  log('sidebar open, server running');

  // main.ts in the editor: its file is the active chip; line 3 selected and added
  await palette('Go to File');
  await page.keyboard.type('main.ts');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'main.ts' }).first().waitFor();
  await page.keyboard.press('Enter');
  const code = page.locator('.editor-instance .view-lines', { hasText: 'helper(1)' });
  await code.waitFor({ timeout: 30000 });
  await chat.locator('.chip', { hasText: 'main.ts' }).waitFor({ timeout: 15000 });
  await page.locator('.editor-instance .view-line', { hasText: 'export const n' }).click();
  await page.keyboard.press('Home');
  await page.keyboard.press('Shift+End');
  await palette('Threadline: Add Selection to Threadline', { focusEditor: false }); // keep the selection
  await chat.locator('.chip', { hasText: 'main.ts:3-3' }).waitFor({ timeout: 15000 });
  log('chips: the selection and the active file');

  // @-completion of lib.ts in the input
  await chat.locator('#input').click();
  await chat.locator('#input').pressSequentially('fix the call, see @li');
  await chat.locator('#completions .completion', { hasText: 'lib.ts' }).waitFor({ timeout: 15000 });
  await chat.locator('#input').press('Tab');
  assert.equal(await chat.locator('#input').inputValue(), 'fix the call, see @lib.ts ');
  await shot('e2e-editor-1-chips.png');

  await push([
    { tool_calls: [{ id: 'call_edit', name: 'edit_file', arguments: { path: 'main.ts', old_string: 'helper(1)', new_string: "helper('one')" } }] },
    { tool_calls: [{ id: 'call_def', name: 'find_definition', arguments: { path: 'main.ts', line: 1, column: 10 } }] },
    { content: 'The call now passes a string.' },
  ]);
  await chat.locator('#input').press('Enter');
  const approval = chat.locator('.approval:not(.answered)').first();
  await approval.waitFor({ timeout: 30000 });
  await approval.locator('button', { hasText: 'Allow once' }).click();
  await chat.locator('.msg.assistant', { hasText: 'The call now passes a string.' }).waitFor({ timeout: 90000 });
  await shot('e2e-editor-2-turn.png');

  const requests = await chatRequests();
  const user = requests[0].body.messages.filter((m) => m.role === 'user').pop().content;
  assert.match(user, /^fix the call, see @lib\.ts/);
  assert.ok(user.includes('<context kind="selection" path="main.ts" lines="3-3">\nexport const n: number = helper(1);\n</context>'), user);
  assert.ok(user.includes('<context kind="file" path="main.ts">'), user);
  assert.ok(user.includes('<context kind="file" path="lib.ts">\nexport function helper(x: number): number {'), user);
  const [edit] = toolTexts(requests[1]);
  assert.match(edit, /Editor diagnostics introduced by this edit \(1 error\):\nmain\.ts:3:33 error: Argument of type 'string' is not assignable to parameter of type 'number'\. \[ts, 2345\]\n {4}export const n: number = helper\('one'\);/, edit);
  const definition = toolTexts(requests[2])[1];
  assert.equal(definition, '1 definition:\nlib.ts:1:17\n    export function helper(x: number): number {');
  log('the type error reached the model; the TypeScript server answered find_definition; ALL OK');
} catch (err) {
  await shot('e2e-editor-failure.png').catch(() => {});
  throw err;
} finally {
  await browser.close();
}
