// Worktree sessions in VS Code (issue 54, B-WT-1, docs/WORKTREES.md) inside code-server: the workspace is made a
// git repository; a task started in the daemon with `threadline exec --detach --worktree fix` writes a file and
// commits it with git from its turn (a run_command under the default sandbox); the Tasks view shows the row with
// its branch and diff stat; "Open Diff" shows the change; "Merge" brings the commit into the main checkout and the
// row says merged. Run: E2E_DRIVER=tasks.mjs E2E_SETTINGS=',"threadline.useDaemon":true' bash test/e2e/run.sh
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openWorkbench, push } from './workbench.mjs';

const { WS } = process.env;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const git = (...args) => execFileSync('git', ['-C', WS, ...args], { encoding: 'utf8' }).trim();

// The fixture: the workspace (notes.md, app.py) as a repository with one commit on main.
git('init', '-q', '-b', 'main');
git('config', 'user.name', 'E2E');
git('config', 'user.email', 'e2e@example.invalid');
git('add', '-A');
git('commit', '-q', '-m', 'initial');
const initial = git('rev-parse', 'HEAD');

const { browser, page, log, shot, openSidebar } = await openWorkbench('e2e-tasks');

// The task, in the daemon before the editor opens: its turn writes feature.py and commits it on its branch.
await push([
  { content: 'Adding the feature.', tool_calls: [{ id: 'call_commit', name: 'run_command', arguments: {
    command: "printf 'def feature():\\n    return 42\\n' > feature.py && git add feature.py && git commit -q -m 'add feature' && git log --oneline -1" } }] },
  { content: 'The feature is committed on this branch.' },
]);
const sid = execFileSync(path.join(REPO, '.venv/bin/threadline'), ['exec', '--detach', '--worktree', 'fix', '--cwd', WS, '--policy', 'auto', 'add the feature'],
  { env: { ...process.env, THREADLINE_DAEMON_IDLE_SECONDS: '60' }, encoding: 'utf8', timeout: 120000 }).trim();
assert.match(sid, /^ses_/);
log('detached worktree task', sid);
// The branch follows the worktree once the turn ends (docs/WORKTREES.md): wait for the commit on threadline/fix.
const until = Date.now() + 120000;
while (!/add feature/.test(git('log', '--format=%s', '-1', 'threadline/fix', '--'))) {
  assert.ok(Date.now() < until, 'the task never committed on threadline/fix');
  await new Promise((r) => setTimeout(r, 500));
}
assert.equal(git('rev-parse', 'HEAD'), initial, 'the main checkout is untouched before the merge');
assert.ok(!fs.existsSync(path.join(WS, 'feature.py')));
log('the task committed on threadline/fix; main untouched');

try {
  await openSidebar();
  // The Tasks view (second view of the Threadline container): one row, branch, state and diff stat
  const tasks = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Tasks' }) });
  const header = tasks.locator('.pane-header');
  if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
  const row = tasks.locator('.monaco-list-row', { hasText: 'threadline/fix' });
  await row.waitFor({ timeout: 60000 });
  const text = await row.innerText();
  assert.match(text, /add the feature\s*idle · 1 file \+2 −0 · threadline\/fix/, text);
  await shot('e2e-tasks-1-view.png');
  log('Tasks view row:', text.replace(/\s+/g, ' '));

  // Open Diff (the row's inline action): the task's change against its base in an editor
  await row.hover();
  await row.locator('.action-label[aria-label="Open Diff"]').click();
  const diff = page.locator('.editor-instance .view-lines', { hasText: '+def feature():' });
  await diff.waitFor({ timeout: 30000 });
  const shown = (await diff.innerText()).replace(/\s+/g, ' '); // monaco's spaces are no-break spaces
  assert.match(shown, /\+\+\+ b\/feature\.py @@ -0,0 \+1,2 @@ \+def feature\(\): \+ return 42/, JSON.stringify(shown));
  await shot('e2e-tasks-2-diff.png');
  log('Open Diff shows feature.py');

  // Merge: the commit lands in the main checkout, the row says merged
  await row.hover();
  await row.locator('.action-label[aria-label="Merge"]').click();
  await page.locator('.notifications-toasts', { hasText: 'threadline/fix merged' }).waitFor({ timeout: 30000 });
  await tasks.locator('.monaco-list-row', { hasText: /merged · .* · threadline\/fix/ }).waitFor({ timeout: 30000 });
  assert.equal(git('log', '--format=%s', '-1', 'main'), 'add feature');
  assert.equal(git('status', '--porcelain'), '');
  assert.equal(fs.readFileSync(path.join(WS, 'feature.py'), 'utf8'), 'def feature():\n    return 42\n');
  await shot('e2e-tasks-3-merged.png');
  log('merged from the Tasks view: main has the commit, the row says merged; ALL OK');
} catch (e) {
  await shot('e2e-tasks-failure.png').catch(() => {});
  throw e;
} finally {
  await browser.close();
}
