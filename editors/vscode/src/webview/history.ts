// Ordering a resumed session: stored messages with each turn's compactions after that turn's messages
// (R-OBS-2: compaction notices sit beside the history, they never replace it). Pure: no DOM, no vscode.
import type { EventItem, FileDiff, TranscriptItem } from '../rpc/protocol';

export interface CompactionEntry {
  mode: string;
  beforeTokens: number;
  afterTokens: number;
  summary: string;
}

export type HistoryEntry = { item: TranscriptItem } | { compaction: CompactionEntry };

export function interleaveCompactions(history: TranscriptItem[], events: EventItem[]): HistoryEntry[] {
  const byTurn = new Map<string, CompactionEntry[]>();
  for (const ev of events) {
    if (ev.kind !== 'contextCompacted' || !ev.turnId) continue;
    const p = ev.payload as Partial<CompactionEntry>;
    const entry = { mode: p.mode ?? '', beforeTokens: p.beforeTokens ?? 0, afterTokens: p.afterTokens ?? 0, summary: p.summary ?? '' };
    byTurn.set(ev.turnId, [...(byTurn.get(ev.turnId) ?? []), entry]);
  }
  const out: HistoryEntry[] = [];
  let turn: string | undefined;
  const flush = () => {
    for (const compaction of (turn && byTurn.get(turn)) || []) out.push({ compaction });
  };
  for (const item of history) {
    if (item.turnId && item.turnId !== turn) {
      flush();
      turn = item.turnId;
    }
    out.push({ item });
  }
  flush();
  return out;
}

/** Applied edits of a resumed session by tool call, from its stored fileDiff events (an edit too large to have
 *  been kept, or one from before diffs were stored, has none: its card shows the text result only). */
export function storedDiffs(events: EventItem[]): Map<string, FileDiff> {
  const out = new Map<string, FileDiff>();
  for (const ev of events) {
    const p = ev.payload as { toolCallId?: string; diff?: FileDiff };
    if (ev.kind === 'fileDiff' && p.toolCallId && p.diff && typeof p.diff.oldText === 'string' && typeof p.diff.newText === 'string') {
      out.set(p.toolCallId, p.diff);
    }
  }
  return out;
}
