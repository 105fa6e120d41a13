// The Tasks view in words (no vscode import: the plain-Node tests use it): one row per worktree session
// (docs/WORKTREES.md) with its branch, state and diff stat against its base.
import type { SessionInfo, WorktreeInfo } from '../rpc/protocol';

export interface TaskRow {
  sessionId: string;
  label: string;
  description: string;
  tooltip: string;
  /** `threadline.task.active`, `.merged` or `.discarded`: which inline actions the row offers. */
  contextValue: string;
  worktree: WorktreeInfo;
}

/** What the session is doing now, as the daemon reports it. */
export function taskState(s: SessionInfo): string {
  if (s.worktree?.state === 'discarded') return 'discarded';
  if (s.waitingForApproval) return 'waiting for approval';
  if (s.running) return 'running';
  return s.worktree?.state === 'merged' ? 'merged' : 'idle';
}

/** `2 files +10 −3`. */
export function diffStat(w: WorktreeInfo): string {
  return `${w.filesChanged} file${w.filesChanged === 1 ? '' : 's'} +${w.insertions} −${w.deletions}`;
}

/** The rows of the Tasks view: the worktree sessions, in listSessions' order (newest first). */
export function taskRows(sessions: SessionInfo[]): TaskRow[] {
  return sessions.filter((s) => s.worktree).map((s) => {
    const w = s.worktree as WorktreeInfo;
    return {
      sessionId: s.sessionId,
      label: s.title || w.branch,
      // state and stat first: a sidebar is narrow and VS Code cuts the end of the line; the tooltip has it all
      description: `${taskState(s)} · ${diffStat(w)} · ${w.branch}`,
      tooltip: [s.title || w.branch, `${w.branch} · ${taskState(s)} · ${diffStat(w)} · ${w.ahead} ahead of ${w.base}`, w.path, s.sessionId].join('\n'),
      contextValue: `threadline.task.${w.state}`,
      worktree: w,
    };
  });
}

/** The message after a merge: the new commit, or the conflicting files (the checkout was left as it was). */
export function mergeMessage(branch: string, r: { merged: boolean; conflicts?: string[] | null; commit?: string | null }): string {
  if (r.merged) return `Threadline: ${branch} merged${r.commit ? ` (${r.commit.slice(0, 12)})` : ''}.`;
  return `Threadline: ${branch} not merged, these files conflict (the checkout is as it was): ${(r.conflicts ?? []).join(', ')}`;
}
