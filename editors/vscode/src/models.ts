// The model picker's items (vscode-free, so the plain-Node unit tests can check them): each configured model with
// its provider, window and prices, the server's default first; picking one calls updateSession (or, before a
// session exists, passes it to createSession).
import type { ListModelsResult, ModelInfo, ModelPrice } from './rpc/protocol';

/** What a pick means: a configured model's name, or null for the server's default provider. */
export interface ModelPickItem {
  label: string;
  description: string;
  detail: string;
  name: string | null;
  picked: boolean;
}

const DEFAULT_LABEL = 'Default model';

function perMillion(usd: number): string {
  return `$${usd < 1 ? usd.toFixed(3).replace(/0$/, '') : usd.toFixed(2)}`;
}

/** "$3.00 in · $0.30 cached · $3.75 cache write · $15.00 out per M tokens", or "no price known". */
export function priceText(price: ModelPrice | null | undefined): string {
  if (!price) return 'no price known';
  const parts = [`${perMillion(price.input)} in`];
  if (typeof price.cachedInput === 'number') parts.push(`${perMillion(price.cachedInput)} cached`);
  if (typeof price.cacheWrite === 'number') parts.push(`${perMillion(price.cacheWrite)} cache write`);
  parts.push(`${perMillion(price.output)} out`);
  return `${parts.join(' · ')} per M tokens`;
}

/** "200k window" (thousands rounded), "1.0M window". */
export function windowText(tokens: number): string {
  if (tokens >= 1_000_000) return `${(tokens / 1_000_000).toFixed(1)}M window`;
  return `${Math.round(tokens / 1000)}k window`;
}

function item(m: ModelInfo, current: string | null | undefined): ModelPickItem {
  return {
    label: m.name ?? DEFAULT_LABEL,
    description: `${m.provider} · ${m.model}`,
    detail: `${windowText(m.contextWindowTokens)} · ${priceText(m.price)}`,
    name: m.name,
    picked: (current ?? null) === m.name,
  };
}

/** The picker's items: the server's default provider (when configured), then the named models in config order. */
export function modelPickItems(result: ListModelsResult, current: string | null | undefined): ModelPickItem[] {
  return [...(result.default ? [result.default] : []), ...result.models].map((m) => item(m, current));
}

/** The sidebar control's text for a session's model: its name, or the default's. */
export function modelButtonLabel(name: string | null | undefined): string {
  return `Model: ${name ?? 'default'}`;
}
