// What every code-server driver needs (drive.mjs, editor.mjs, attach.mjs): Chromium on the workbench, a log with
// the time since start, screenshots, the model double's control endpoint, the webview frame holding a selector,
// the command palette, and the Threadline sidebar opened with its server running.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const { CS_URL, FAKE_BASE } = process.env;

/** Queue scripted answers on the model double. */
export async function push(items) {
  const r = await fetch(`${FAKE_BASE}/_control/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) });
  assert.ok(r.ok, `push ${r.status}`);
}

/** A headless Chromium page for code-server; `tag` prefixes the log lines. */
export async function openWorkbench(tag) {
  const shots = process.env.SHOT_DIR;
  fs.mkdirSync(shots, { recursive: true });
  const t0 = Date.now();
  const log = (...a) => console.log(`[${tag} ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const shot = (name) => page.screenshot({ path: path.join(shots, name) });

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

  /** Load the workbench, open the Threadline sidebar, wait until its server runs; the chat's frame. */
  async function openSidebar() {
    await page.goto(CS_URL);
    await page.locator('.monaco-workbench').waitFor({ timeout: 90000 });
    log('workbench loaded');
    await page.locator('.activitybar .action-item a[aria-label^="Threadline"]').first().click({ timeout: 60000 });
    const chat = await findFrame('#input', 60000);
    await chat.locator('#banner').waitFor({ state: 'hidden', timeout: 30000 });
    log('sidebar open, server running');
    return chat;
  }

  return { browser, page, log, shot, findFrame, palette, openSidebar };
}
