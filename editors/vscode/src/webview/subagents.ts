// A subagent's live progress (B-SUB-1), shown as a collapsible card inside its parent's `task` tool card. The child's
// sessionUpdates arrive with its own sessionId and the parent's ids; this folds them into a few lines. Pure (no DOM),
// so the plain-Node tests check it.

import type { SessionUpdate } from '../rpc/protocol';

type Update = SessionUpdate['update'];

export type ChildState = 'running' | 'done' | 'failed' | 'cancelled';

export interface ChildProgress {
  childSessionId: string;
  state: ChildState;
  lines: string[]; // one per tool call the child made, with its outcome when it was not ok
  tokens: number; // input tokens the child's model calls used so far
}

/** What one child update does: `u` is the update of a sessionUpdate whose parentToolCallId is this card's. */
export function childProgress(prev: ChildProgress | undefined, childSessionId: string, u: Update): ChildProgress {
  const p: ChildProgress = prev ? { ...prev, lines: [...prev.lines] } : { childSessionId, state: 'running', lines: [], tokens: 0 };
  switch (u.kind) {
    case 'toolCall':
      p.lines.push(u.title || u.tool);
      break;
    case 'toolResult':
      if (u.status !== 'ok') p.lines.push(`  ${u.tool}: ${u.status}`);
      break;
    case 'usage':
      p.tokens += u.inputTokens || 0;
      break;
    case 'turnCompleted':
      p.state = u.stopReason === 'endTurn' ? 'done' : u.stopReason === 'cancelled' ? 'cancelled' : 'failed';
      break;
  }
  return p;
}

/** The card's one-line summary. */
export function childSummary(p: ChildProgress): string {
  const steps = p.lines.filter((l) => !l.startsWith('  ')).length;
  return `Subagent · ${p.state} · ${steps} step${steps === 1 ? '' : 's'}${p.tokens ? ` · ${p.tokens} tokens read` : ''}`;
}
