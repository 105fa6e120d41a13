// The context meter's cached share (src/webview/meter.ts), B-CACHE-5.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

const { cachedShare } = lib;

test('B-CACHE-5: the cached share is the floored percentage of the last request input', () => {
  assert.equal(cachedShare(520, 1234), '42% cached');
  assert.equal(cachedShare(0, 10), '0% cached');
  assert.equal(cachedShare(999, 1000), '99% cached');
  assert.equal(cachedShare(10, 10), '100% cached');
  assert.equal(cachedShare(50, 10), '100% cached');
});

test('B-CACHE-5: no share when the provider reports no cache figure or there was no input', () => {
  assert.equal(cachedShare(undefined, 1234), undefined);
  assert.equal(cachedShare(0, 0), undefined);
  assert.equal(cachedShare(5, undefined), undefined);
});
