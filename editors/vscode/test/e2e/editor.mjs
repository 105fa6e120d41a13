// Editor grounding (issue 34) inside code-server, with VS Code's built-in TypeScript features: a selection added
// with "Add Selection to Threadline", the active file chip and an @-completed mention go with the message; the
// agent edits main.ts into a type error, which VS Code reports and the model's next request contains; a
// find_definition answered by the real TypeScript server. Run: E2E_DRIVER=editor.mjs bash test/e2e/run.sh
import assert from 'node:assert/strict';
import { openWorkbench, push } from './workbench.mjs';

const { FAKE_BASE } = process.env;
const chatRequests = async () => (await (await fetch(`${FAKE_BASE}/_control/requests`)).json()).filter((r) => r.path.startsWith('/v1/chat'));
const toolTexts = (req) => req.body.messages.filter((m) => m.role === 'tool').map((m) => m.content);

const { browser, page, log, shot, palette, openSidebar } = await openWorkbench('e2e-editor');

try {
  const chat = await openSidebar();

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
