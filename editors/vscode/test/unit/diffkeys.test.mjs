// The diff editor's title-bar actions (src/diffKeys.ts): Allow/Reject only on a diff whose approval is still
// pending, "Rewind This Edit" only on an applied edit with a known turn; package.json matches these paths.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { lib } from '../support/harness.mjs';

const { APPLIED_EDITS_KEY, DiffStates, PENDING_REVIEWS_KEY, diffSidePath, toolCallOfPath } = lib;
const diff = { path: 'app.py', oldText: 'print("hello")\n', newText: 'print("bonjour")\n' };
const after = (id) => diffSidePath(id, 'after', 'app.py');
const proposed = (id) => diffSidePath(id, 'proposed', 'app.py');

test('diff review: a pending approval\'s diff offers Allow/Reject, and loses them once answered', () => {
  const s = new DiffStates();
  s.propose('call_1', diff);
  assert.deepEqual(s.titleBarKeys(), { [PENDING_REVIEWS_KEY]: [proposed('call_1')], [APPLIED_EDITS_KEY]: [] });
  assert.ok(s.isPending('call_1'));
  assert.equal(s.newSide('call_1'), 'proposed');
  s.settle('call_1'); // rejected (or withdrawn): the diff stays readable, with no actions
  assert.deepEqual(s.titleBarKeys(), { [PENDING_REVIEWS_KEY]: [], [APPLIED_EDITS_KEY]: [] });
  assert.equal(s.diff('call_1'), diff);
  assert.equal(s.appliedEdit('call_1'), undefined);
});

test('diff review: an applied edit (live or stored) offers Rewind, never Allow/Reject', () => {
  const s = new DiffStates();
  s.propose('call_2', diff);
  s.settle('call_2');
  s.applied('call_2', diff, 'sess', 'turn_2'); // allowed, then its tool result came
  s.applied('call_3', diff, 'sess', 'turn_3'); // a resumed session's fileDiff event
  s.applied('call_4', diff); // no turn known: shown, but not rewindable from its diff
  assert.deepEqual(s.titleBarKeys(), { [PENDING_REVIEWS_KEY]: [], [APPLIED_EDITS_KEY]: [after('call_2'), after('call_3')] });
  assert.deepEqual(s.appliedEdit('call_3'), { sessionId: 'sess', turnId: 'turn_3' });
  assert.ok(!s.isPending('call_2'));
  assert.equal(s.newSide('call_2'), 'after'); // "Show diff" opens the applied change, not the old proposal
  s.settle('unknown'); // a late answer for a call without a diff changes nothing
  assert.equal(s.titleBarKeys()[APPLIED_EDITS_KEY].length, 2);
});

test('diff review: the document path names its tool call, and package.json\'s menus use these keys', () => {
  assert.equal(diffSidePath('call_9', 'before', 'src/a b.py'), '/call_9/before/src/a b.py');
  assert.equal(toolCallOfPath(diffSidePath('call_9', 'after', 'src/a.py')), 'call_9');
  const menus = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url))).contributes.menus['editor/title'];
  const when = (cmd) => menus.find((m) => m.command === cmd).when;
  assert.equal(when('threadline.allowEdit'), `resourceScheme == threadline-diff && resourcePath in ${PENDING_REVIEWS_KEY}`);
  assert.equal(when('threadline.rejectEdit'), when('threadline.allowEdit'));
  assert.equal(when('threadline.rewindEdit'), `resourceScheme == threadline-diff && resourcePath in ${APPLIED_EDITS_KEY}`);
});
