// B-WEB-1: the web tools' cards carry a "web" badge (src/webview/toolBadges.ts); other tools' cards none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

const { toolBadge } = lib;

test('B-WEB-1: web_fetch and web_search cards are marked as reaching the web', () => {
  assert.equal(toolBadge('web_fetch').text, 'web');
  assert.match(toolBadge('web_fetch').title, /once per host/);
  assert.equal(toolBadge('web_search').text, 'web');
  assert.equal(toolBadge('read_file'), undefined);
  assert.equal(toolBadge('run_command'), undefined);
});
