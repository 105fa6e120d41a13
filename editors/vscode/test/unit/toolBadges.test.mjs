// B-WEB-1: the web tools' cards carry a "web" badge (src/webview/toolBadges.ts); other tools' cards none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

const { cardTitle, toolBadge } = lib;

test('B-WEB-1: web_fetch and web_search cards are marked as reaching the web', () => {
  assert.equal(toolBadge('web_fetch').text, 'web');
  assert.match(toolBadge('web_fetch').title, /once per host/);
  assert.equal(toolBadge('web_search').text, 'web');
  assert.equal(toolBadge('read_file'), undefined);
  assert.equal(toolBadge('run_command'), undefined);
});

test('issue 51: a tool card shows the tool name once, then what the call is about', () => {
  assert.equal(cardTitle('write_file', 'write_file: notes/a.txt'), 'notes/a.txt');
  assert.equal(cardTitle('run_command', 'run_command: echo time: now'), 'echo time: now');
  assert.equal(cardTitle('update_plan', 'update_plan'), '');
  assert.equal(cardTitle('task', 'Map the parser'), 'Map the parser');
  assert.equal(cardTitle('read_file', undefined), '');
});

test('issue 51: the compaction table says when in one line', () => {
  assert.equal(lib.shortTime('2026-12-07T23:18:44.123456+00:00'), '2026-12-07 23:18:44');
  assert.equal(lib.shortTime('yesterday'), 'yesterday');
});
