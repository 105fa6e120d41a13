// Pure text for the context meter (no DOM), so the plain-Node unit tests can check it.

/** B-CACHE-5: "42% cached" for the share of a request's input the provider served from its prompt cache;
 *  undefined when the provider reported no cache figure (or there was no input). Floored, so "100%" means all. */
export function cachedShare(cachedInputTokens: number | undefined, inputTokens: number | undefined): string | undefined {
  if (typeof cachedInputTokens !== 'number' || typeof inputTokens !== 'number' || inputTokens <= 0) return undefined;
  return `${Math.min(100, Math.floor((cachedInputTokens * 100) / inputTokens))}% cached`;
}

/** The session's cost for the meter: "$0.0123" (four decimals under a dollar, two from there), from the usage
 *  update's `totals.costUsd`; undefined when no price is known (the server then sends none: absent, never $0). */
export function sessionCost(costUsd: number | undefined): string | undefined {
  if (typeof costUsd !== 'number' || !Number.isFinite(costUsd) || costUsd < 0) return undefined;
  return costUsd >= 1 ? `$${costUsd.toFixed(2)}` : `$${costUsd.toFixed(4)}`;
}

/** B-BUDGET-1: the context budget beside the window, "budget auto" or "budget 60k" (`[context] budget`), from the
 *  usage update's `budgetSource`/`budgetTokens` or getContextView's `budget`; undefined when the server sends none. */
export function budgetText(source: string | null | undefined, tokens: number | null | undefined,
                           fmt: (n: number) => string): string | undefined {
  if (source === 'config' && typeof tokens === 'number') return `budget ${fmt(tokens)}`;
  return source === 'auto' ? 'budget auto' : undefined;
}

/** The meter's label: the last request against the window, then the budget, its cached share and the session's
 *  cost when known, e.g. "Last request 12.3k / 200k tokens (6%) · budget auto · 42% cached · $0.0123". Named for
 *  what it counts: the context view beside it shows the next request ("Next request ≈…"), which is larger by what
 *  came since (issue 51: two unlabelled numbers read as one figure that disagreed with itself). An estimate before
 *  any request was answered is the next request's. */
export function meterLabel(tokens: number, windowTokens: number, fmt: (n: number) => string, estimated = false,
                           cached?: string, cost?: string, budget?: string): string {
  const pct = windowTokens > 0 ? Math.min(100, (tokens / windowTokens) * 100) : 0;
  const what = estimated ? 'Next request ≈' : 'Last request ';
  const base = windowTokens > 0
    ? `${what}${fmt(tokens)} / ${fmt(windowTokens)} tokens (${Math.round(pct)}%)`
    : `${what}${fmt(tokens)} tokens`;
  return [base, budget, cached, cost].filter(Boolean).join(' · ');
}
