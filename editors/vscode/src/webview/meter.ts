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
