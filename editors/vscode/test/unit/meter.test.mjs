// The context meter's cached share (B-CACHE-5) and the session's cost beside it (src/webview/meter.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

const { cachedShare, meterLabel, sessionCost } = lib;

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

test('the session cost reads in dollars: four decimals under a dollar, two from there', () => {
  assert.equal(sessionCost(0.000684), '$0.0007');
  assert.equal(sessionCost(0.1234567), '$0.1235');
  assert.equal(sessionCost(12.345), '$12.35');
  assert.equal(sessionCost(0), '$0.0000'); // a known price that came to nothing yet
});

test('no cost is shown when no price is known (the server sends none), never $0', () => {
  assert.equal(sessionCost(undefined), undefined);
  assert.equal(sessionCost(Number.NaN), undefined);
  const fmt = (n) => String(n);
  assert.equal(meterLabel(500, 1000, fmt, false, '42% cached'), 'Last request 500 / 1000 tokens (50%) · 42% cached');
});

test('the meter label puts the cost after the window use and the cached share', () => {
  const fmt = (n) => `${n / 1000}k`;
  assert.equal(meterLabel(12000, 200000, fmt, false, '42% cached', '$0.0123'),
    'Last request 12k / 200k tokens (6%) · 42% cached · $0.0123');
  // issue 51: each number says which request it counts (the context view shows the next one)
  assert.equal(meterLabel(3000, 6000, fmt, true, undefined, '$1.50'), 'Next request ≈3k / 6k tokens (50%) · $1.50');
  assert.equal(meterLabel(3000, 0, fmt), 'Last request 3k tokens');
});

test('B-BUDGET-1: the meter shows the budget beside the window', () => {
  const fmt = (n) => `${n / 1000}k`;
  assert.equal(lib.budgetText('auto', undefined, fmt), 'budget auto');
  assert.equal(lib.budgetText('config', 60000, fmt), 'budget 60k');
  assert.equal(lib.budgetText(undefined, undefined, fmt), undefined);
  assert.equal(meterLabel(12000, 1000000, fmt, false, '42% cached', undefined, 'budget auto'),
    'Last request 12k / 1000k tokens (1%) · budget auto · 42% cached');
});
