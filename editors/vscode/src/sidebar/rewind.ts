// Rewind, in words (no vscode import: the plain-Node tests use it). rewindFiles reports each path as restored,
// unchanged, conflicted (changed outside Threadline: kept unless forced) or notRestorable (over a checkpoint cap).
import type { RewindFilesResult, TurnCheckpoints } from '../rpc/protocol';

export interface RewindPlan {
  summary: string; // one line per path, what the rewind does (or did)
  conflicted: number;
  actionable: number; // paths a rewind would change (without force)
}

const WORDS: Record<string, string> = {
  restored: 'restore', unchanged: 'already as before', conflicted: 'changed outside Threadline, kept unless overwritten',
  notRestorable: 'cannot be restored (over the checkpoint size cap)',
};

/** A dry run's result as a plan the user confirms. */
export function planRewind(result: RewindFilesResult): RewindPlan {
  const lines = result.files.map((f) => {
    const what = f.status === 'restored' ? (f.change === 'removed' ? 'remove (the turn created it)' : 'restore') : WORDS[f.status];
    return `${f.path}: ${what}`;
  });
  return {
    summary: [...(lines.length ? lines : ['No file changes were recorded from this turn on.']), result.note].join('\n'),
    conflicted: result.files.filter((f) => f.status === 'conflicted').length,
    actionable: result.files.filter((f) => f.status === 'restored').length,
  };
}

/** What a real rewind did, for a notification. */
export function rewindDone(result: RewindFilesResult): string {
  const count = (s: string) => result.files.filter((f) => f.status === s).length;
  const parts = [`${count('restored')} restored`, `${count('unchanged')} unchanged`];
  if (count('conflicted')) parts.push(`${count('conflicted')} conflicted (kept)`);
  if (count('notRestorable')) parts.push(`${count('notRestorable')} not restorable`);
  return `Rewound files: ${parts.join(', ')}. ${result.note}`;
}

/** forkSession's atSeq that keeps the conversation up to, not including, the turn. */
export function forkSeqBefore(turn: Pick<TurnCheckpoints, 'seq'>): number {
  return Math.max(0, turn.seq - 1);
}

export interface TurnPickItem {
  label: string;
  description: string;
  detail: string;
  turnId: string;
}

/** The "Rewind Files" quick pick's items: the newest turn first, each with the files it changed. */
export function turnPickItems(turns: TurnCheckpoints[]): TurnPickItem[] {
  return [...turns].reverse().map((t) => ({
    label: `Turn at message ${t.seq}`,
    description: t.createdAt.slice(0, 19).replace('T', ' '),
    detail: t.files.length
      ? t.files.map((f) => `${f.change === 'created' ? '+' : '~'}${f.path}${f.restorable ? '' : ' (not restorable)'}`).join('  ')
      : 'no file changes',
    turnId: t.turnId,
  }));
}
