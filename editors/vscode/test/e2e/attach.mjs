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
import { openWorkbench, push } from './workbench.mjs';

const { WS } = process.env;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

const { browser, page, log, shot, palette, openSidebar } = await openWorkbench('e2e-attach');

// The task, started in the daemon before any editor is open: its write_file waits for an approval.
await push([
  { content: 'Writing the report.', tool_calls: [{ id: 'call_report', name: 'write_file', arguments: { path: 'report.md', content: '# Report\n' } }] },
  { content: 'The report is written.' },
]);
const sid = execFileSync(path.join(REPO, '.venv/bin/threadline'), ['exec', '--detach', '--cwd', WS, '--policy', 'ask', 'write the report'],
  { env: { ...process.env, THREADLINE_DAEMON_IDLE_SECONDS: '20' }, encoding: 'utf8', timeout: 120000 }).trim();
assert.match(sid, /^ses_/);
log('detached task', sid);

try {
  const chat = await openSidebar();

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
