// Drives the whole task inside code-server: sidebar, streamed reply, tool card, approvals, artifact editor,
// palette Submit, compaction notice with the meter dropping, context view, an edit reviewed in the native diff
// editor (rejected, then allowed) and rewound from its turn's menu. Screenshots as it goes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { EDIT_TURNS, FILLER_TURNS, TURNS } from '../support/scenario.mjs';
import { openWorkbench, push } from './workbench.mjs';

const { WS } = process.env;
const { browser, page, log, shot, findFrame, palette, openSidebar } = await openWorkbench('e2e');
page.on('console', (m) => { if (m.type() === 'error' && /threadline/i.test(m.text())) log('[console.error]', m.text().slice(0, 200)); });
// The diff editor's title-bar action of that name (Allow Edit, Reject Edit, Rewind This Edit)
const titleAction = (name) => page.locator(`.editor-actions .action-label[aria-label^="${name}"]`);
/** Which of the review actions the active diff editor's title bar shows (after they settled). */
async function reviewActions(expected) {
  const names = ['Allow Edit', 'Reject Edit', 'Rewind This Edit'];
  for (const n of names) await titleAction(n).first().waitFor({ state: expected.includes(n) ? 'visible' : 'detached', timeout: 15000 });
  const shown = [];
  for (const n of names) if (await titleAction(n).count()) shown.push(n);
  assert.deepEqual(shown, expected, 'the diff editor title bar');
}

try {
  const chat = await openSidebar();

  // 1. a turn: streamed markdown reply and a tool card
  await push(TURNS[0].script);
  await chat.locator('#input').fill(TURNS[0].text);
  await chat.locator('#input').press('Enter');
  await chat.locator('.msg.assistant h2', { hasText: 'Overview' }).waitFor({ timeout: 30000 });
  await chat.locator('.tool-card[data-tool-call="call_ls"] .tool-status', { hasText: 'ok' }).waitFor();
  await chat.locator('#send:not([disabled])').waitFor();
  assert.equal(await chat.evaluate(() => window.__pwned), undefined);
  assert.equal(await chat.locator('#log script, #log img').count(), 0);
  await chat.locator('.tool-card[data-tool-call="call_ls"] summary').first().click();
  await shot('e2e-1-chat-tool-card.png');
  log('turn 1: streamed reply and tool card');

  // 2. approvals: write_file and run_command, both allowed once; the command output becomes an artifact
  await push(TURNS[1].script);
  await chat.locator('#input').fill(TURNS[1].text);
  await chat.locator('#send').click();
  const approval = chat.locator('.approval:not(.answered)').first();
  await approval.waitFor({ timeout: 30000 });
  assert.match(await approval.innerText(), /write_file/);
  await shot('e2e-2-approval.png');
  await approval.locator('button', { hasText: 'Allow once' }).click();
  const approval2 = chat.locator('.approval:not(.answered)').first();
  await approval2.waitFor({ timeout: 30000 });
  assert.match(await approval2.innerText(), /run_command/);
  await approval2.locator('button', { hasText: 'Allow once' }).click();
  const report = chat.locator('.tool-card[data-tool-call="call_report"]');
  await report.locator('.tool-status', { hasText: 'ok' }).waitFor({ timeout: 60000 });
  await chat.locator('#send:not([disabled])').waitFor({ timeout: 30000 });
  assert.equal(fs.readFileSync(path.join(WS, 'hello.txt'), 'utf8'), 'hello from threadline\n');
  log('turn 2: approvals answered, file written, command ran');

  // 3. the artifact opens read-only in an editor, paged through readArtifact
  await report.locator('summary').first().click();
  const link = report.locator('.artifact-link');
  await link.waitFor();
  const artifactId = await link.getAttribute('data-artifact');
  await link.click();
  const tab = page.locator('.tabs-container .tab', { hasText: artifactId });
  await tab.waitFor({ timeout: 30000 });
  await page.locator('.editor-instance .view-lines', { hasText: 'report line 0' }).waitFor({ timeout: 30000 });
  assert.match(await tab.innerText(), /page 1 of 2/);
  await shot('e2e-3-artifact.png');
  log('artifact', artifactId, 'open in an editor');

  // 4. a long session: filler turns (one from the palette's Threadline: Submit) until the context compacts
  const meterTokens = async () => Number(await chat.locator('#meter').getAttribute('data-tokens'));
  let before = 0;
  let dropped = false;
  for (const [i, turn] of FILLER_TURNS.entries()) {
    await push(turn.script);
    before = await meterTokens();
    if (i === 0) {
      await palette('Threadline: Submit');
      await page.locator('.quick-input-widget input').waitFor();
      await page.keyboard.type(turn.text);
      await page.keyboard.press('Enter');
    } else {
      await chat.locator('#input').fill(turn.text);
      await chat.locator('#input').press('Enter');
    }
    await chat.locator('.msg.assistant', { hasText: turn.script[0].content.slice(0, 30) }).waitFor({ timeout: 30000 });
    await chat.locator('#send:not([disabled])').waitFor({ timeout: 30000 });
    if (await chat.locator('.notice.compaction').count()) {
      dropped = true;
      break;
    }
  }
  assert.ok(dropped, 'the long session compacted');
  const notice = chat.locator('.notice.compaction').first();
  const text = await notice.innerText();
  const [, b, a] = /([\d,]+) → ([\d,]+) tokens/.exec(text);
  const afterTokens = await meterTokens();
  assert.ok(afterTokens < before, `meter dropped: ${before} -> ${afterTokens} (notice ${b} -> ${a})`);
  await notice.locator('summary').click();
  await notice.scrollIntoViewIfNeeded();
  await shot('e2e-4-compaction-meter.png');
  log(`compaction notice ${b} -> ${a}; meter ${before} -> ${afterTokens}`);

  // 5. the context view
  await palette('Threadline: Show Context View');
  const cv = await findFrame('.cv-table', 30000);
  assert.ok(await cv.locator('.cv-row').count() > 2);
  assert.ok(['full', 'microcompacted', 'summarized', 'fallback'].includes(await cv.locator('#cv-mode').innerText()));
  await shot('e2e-5-context-view.png');
  log('context view shown');

  // 6. diff review: the approval of an edit_file opens VS Code's diff editor (read-only virtual documents, old |
  // new); its title bar's Reject leaves the file alone, and on a second proposal Allow writes it
  const appPy = path.join(WS, 'app.py');
  const original = fs.readFileSync(appPy, 'utf8');
  const diffEditor = page.locator('.monaco-diff-editor');
  async function reviewEdit(turn, action) {
    // Close every tab by its own button (the palette's focus click would land in the context view's webview)
    for (let i = 0; i < 20 && await page.locator('.tabs-container .tab').count(); i++) {
      await page.locator('.tabs-container .tab .tab-actions .action-label').first().click();
      await page.waitForTimeout(200);
    }
    await diffEditor.waitFor({ state: 'detached', timeout: 15000 });
    await push(turn.script);
    await chat.locator('#input').fill(turn.text);
    await chat.locator('#input').press('Enter');
    await diffEditor.waitFor({ timeout: 30000 });
    await diffEditor.locator('.editor.original .view-lines', { hasText: 'print("hello")' }).waitFor({ timeout: 15000 });
    await diffEditor.locator('.editor.modified .view-lines', { hasText: 'print("bonjour")' }).waitFor({ timeout: 15000 });
    const tab = page.locator('.tabs-container .tab.active');
    assert.match(await tab.innerText(), /app\.py \(proposed/);
    assert.ok(await chat.locator('.approval:not(.answered)', { hasText: 'edit_file' }).count(), 'the chat shows the approval too');
    assert.equal(fs.readFileSync(appPy, 'utf8'), original, 'nothing written before the answer');
    await reviewActions(['Allow Edit', 'Reject Edit']); // pending: Allow/Reject, no Rewind
    return titleAction(action);
  }
  const reject = await reviewEdit(EDIT_TURNS[0], 'Reject Edit');
  await shot('e2e-6-diff-review.png');
  await reject.click();
  const rejected = chat.locator('.tool-card[data-tool-call="call_edit_rejected"]');
  await rejected.locator('.tool-status', { hasText: 'denied' }).waitFor({ timeout: 30000 });
  await chat.locator('#send:not([disabled])').waitFor({ timeout: 30000 });
  assert.equal(fs.readFileSync(appPy, 'utf8'), original, 'rejected: the file is unchanged on disk');
  await diffEditor.waitFor();
  await reviewActions([]); // answered: the still-open proposal keeps no Allow/Reject (and was never applied)
  log('diff editor: rejected, app.py unchanged');

  const allow = await reviewEdit(EDIT_TURNS[1], 'Allow Edit');
  await allow.click();
  const allowed = chat.locator('.tool-card[data-tool-call="call_edit_allowed"]');
  await allowed.locator('.tool-status', { hasText: 'ok' }).waitFor({ timeout: 30000 });
  await chat.locator('#send:not([disabled])').waitFor({ timeout: 30000 });
  assert.equal(fs.readFileSync(appPy, 'utf8'), 'print("bonjour")\n', 'allowed: the file is changed on disk');
  await allowed.locator('summary').first().click();
  await diffEditor.waitFor();
  await reviewActions([]); // the answered proposal's editor: nothing to click any more
  await allowed.locator('.diff-link', { hasText: 'Show diff of app.py' }).click();
  await page.locator('.tabs-container .tab.active', { hasText: 'app.py (Threadline edit)' }).waitFor({ timeout: 30000 });
  await diffEditor.locator('.editor.modified .view-lines', { hasText: 'print("bonjour")' }).waitFor({ timeout: 30000 });
  await reviewActions(['Rewind This Edit']); // the tool card's "Show diff": an applied edit has no Allow/Reject
  log('diff editor: allowed, app.py changed; the applied diff offers Rewind only');

  // 7. the turn's menu: "Rewind files" puts app.py back as it was before that turn
  const bubble = chat.locator('.msg.user', { hasText: EDIT_TURNS[1].text });
  await bubble.locator('.turn-menu').click();
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 15000 });
  assert.match(await dialog.innerText(), /app\.py: restore/);
  assert.match(await dialog.innerText(), /run_command/);
  await shot('e2e-7-rewind.png');
  await dialog.locator('.monaco-button', { hasText: /^Rewind Files$/ }).click();
  const end = Date.now() + 30000;
  while (fs.readFileSync(appPy, 'utf8') !== original && Date.now() < end) await page.waitForTimeout(200);
  assert.equal(fs.readFileSync(appPy, 'utf8'), original, 'rewound: the file is back on disk');
  await page.locator('.notifications-toasts', { hasText: 'Rewound files: 1 restored' }).waitFor({ timeout: 15000 });
  log('rewind files: app.py restored');

  // 8. after a server restart, the resumed session's tool card still shows the applied edit as a diff (the
  // server stored it as a fileDiff event; the webview's cards are rebuilt from readTranscript + readEvents)
  const sid = await chat.locator('#session').inputValue();
  await palette('Threadline: Restart Server');
  await chat.locator('[data-server]:not([data-server="running"])').waitFor({ timeout: 5000 }).catch(() => {});
  await chat.locator('[data-server="running"]').waitFor({ timeout: 60000 });
  await chat.locator('#new-session').click();
  await chat.locator('#log .empty').waitFor({ timeout: 30000 });
  await chat.locator('#session').selectOption(sid);
  const resumed = chat.locator('.tool-card[data-tool-call="call_edit_allowed"]');
  await resumed.locator('.tool-status', { hasText: 'ok' }).waitFor({ timeout: 30000 });
  await resumed.locator('summary').first().click();
  await resumed.locator('.rewind-edit').waitFor();
  assert.equal(await chat.locator('.tool-card[data-tool-call="call_edit_rejected"] .diff-link').count(), 0, 'a rejected edit has no diff');
  await palette('View: Close All Editors');
  await resumed.locator('.diff-link', { hasText: 'Show diff of app.py' }).click();
  await diffEditor.locator('.editor.modified .view-lines', { hasText: 'print("bonjour")' }).waitFor({ timeout: 30000 });
  await diffEditor.locator('.editor.original .view-lines', { hasText: 'print("hello")' }).waitFor();
  await reviewActions(['Rewind This Edit']); // a stored fileDiff: applied, so no Allow/Reject either
  await shot('e2e-8-resumed-diff.png');
  await titleAction('Rewind This Edit').click();
  await dialog.waitFor({ timeout: 15000 });
  assert.match(await dialog.innerText(), /Rewind this edit\?/);
  assert.match(await dialog.innerText(), /app\.py/);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached', timeout: 15000 });
  log('after a restart: the resumed tool card opens the stored diff; ALL OK');
} catch (err) {
  await shot('e2e-failure.png').catch(() => {});
  throw err;
} finally {
  await browser.close();
}
