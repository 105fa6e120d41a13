// Pure text for the context meter (no DOM), so the plain-Node unit tests can check it.

/** B-CACHE-5: "42% cached" for the share of a request's input the provider served from its prompt cache;
 *  undefined when the provider reported no cache figure (or there was no input). Floored, so "100%" means all. */
export function cachedShare(cachedInputTokens: number | undefined, inputTokens: number | undefined): string | undefined {
  if (typeof cachedInputTokens !== 'number' || typeof inputTokens !== 'number' || inputTokens <= 0) return undefined;
  return `${Math.min(100, Math.floor((cachedInputTokens * 100) / inputTokens))}% cached`;
}
