// Ordering a resumed session: stored messages with each turn's compactions after that turn's messages
// (R-OBS-2: compaction notices sit beside the history, they never replace it). Pure: no DOM, no vscode.
import type { EventItem, TranscriptItem } from '../rpc/protocol';

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
