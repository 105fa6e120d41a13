// The daemon from VS Code (B-DAEMON-1) inside code-server: a task started with `threadline exec --detach` waits on
// an approval with no client attached; the sidebar (threadline.useDaemon: it runs `threadline connect`) attaches
// with "Threadline: Attach to Running Session", shows what happened before it came, gets the waiting approval,
// answers it, and watches the turn finish. Run: E2E_DRIVER=attach.mjs E2E_SETTINGS=',"threadline.useDaemon":true'
// bash test/e2e/run.sh
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const { CS_URL, FAKE_BASE, WS } = process.env;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const SHOT = process.env.SHOT_DIR;
fs.mkdirSync(SHOT, { recursive: true });
const t0 = Date.now();
const log = (...a) => console.log(`[e2e-attach ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const push = async (items) => {
  const r = await fetch(`${FAKE_BASE}/_control/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) });
  assert.ok(r.ok, `push ${r.status}`);
};

// The task, started in the daemon before any editor is open: its write_file waits for an approval.
await push([
  { content: 'Writing the report.', tool_calls: [{ id: 'call_report', name: 'write_file', arguments: { path: 'report.md', content: '# Report\n' } }] },
  { content: 'The report is written.' },
]);
const sid = execFileSync(path.join(REPO, '.venv/bin/threadline'), ['exec', '--detach', '--cwd', WS, '--policy', 'ask', 'write the report'],
  { env: { ...process.env, THREADLINE_DAEMON_IDLE_SECONDS: '20' }, encoding: 'utf8', timeout: 120000 }).trim();
assert.match(sid, /^ses_/);
log('detached task', sid);

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
async function palette(command) {
  await page.locator('.part.editor').click(); // a focused webview swallows keys
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
  log('sidebar open, connected to the daemon');

  await palette('Threadline: Attach to Running Session');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'write the report' }).first();
  await row.waitFor({ timeout: 30000 });
  assert.match(await row.innerText(), /waiting for approval/i);
  await row.click();
  // What happened before the editor came: the user's task and the model's words, then the waiting approval
  await chat.locator('.msg.user', { hasText: 'write the report' }).waitFor({ timeout: 30000 });
  await chat.locator('.msg.assistant', { hasText: 'Writing the report.' }).waitFor({ timeout: 30000 });
  const allow = chat.locator('button', { hasText: /^Allow once$/i }).first();
  await allow.waitFor({ timeout: 30000 });
  await shot('attach-1-waiting-approval.png');
  log('attached: earlier updates and the waiting approval shown');
  await allow.click();
  await chat.locator('.msg.assistant', { hasText: 'The report is written.' }).waitFor({ timeout: 60000 });
  assert.equal(fs.readFileSync(path.join(WS, 'report.md'), 'utf8'), '# Report\n');
  await shot('attach-2-finished.png');
  log('approval answered from VS Code, the turn finished, report.md written; ALL OK');
} catch (e) {
  await shot('attach-failure.png').catch(() => {});
  throw e;
} finally {
  await browser.close();
}
