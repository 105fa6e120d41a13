// Which diff editor shows which title-bar actions (no vscode import: the plain-Node tests use it). The title bar
// acts on the diff's right-hand document: "proposed" while the edit's approval is pending, "after" once it was
// applied (a live tool result or a resumed session's stored fileDiff event), so a proposal and its applied
// change are two editors. package.json's menus match that document's path against two context keys: Allow/Reject
// only while the approval is pending, "Rewind This Edit" only on an applied edit with a known turn.
import type { FileDiff } from './rpc/protocol';

export const PENDING_REVIEWS_KEY = 'threadline.pendingReviews';
export const APPLIED_EDITS_KEY = 'threadline.appliedEdits';

export type DiffSide = 'before' | 'proposed' | 'after';

/** The path of one side's virtual document (threadline-diff:/<toolCallId>/<side>/<path>). */
export function diffSidePath(toolCallId: string, side: DiffSide, filePath: string): string {
  return `/${toolCallId}/${side}/${filePath}`;
}

/** The tool call of a diff document's path. */
export function toolCallOfPath(path: string): string | undefined {
  return path.split('/')[1] || undefined;
}

export interface AppliedEdit {
  sessionId: string;
  turnId: string;
}

interface DiffEntry {
  diff: FileDiff;
  pending: boolean;
  applied?: AppliedEdit; // applied within a known turn: it can be rewound
}

export class DiffStates {
  private readonly entries = new Map<string, DiffEntry>();

  /** An approval shows this proposed change: Allow/Reject apply until it is answered or withdrawn. */
  propose(toolCallId: string, diff: FileDiff): void {
    this.entries.set(toolCallId, { diff, pending: true });
  }

  /** The approval was answered, withdrawn or lost with the server: the diff is for reading only. */
  settle(toolCallId: string): void {
    const e = this.entries.get(toolCallId);
    if (e) e.pending = false;
  }

  /** The change was written (without a turn it still shows, but cannot be rewound from its diff). */
  applied(toolCallId: string, diff: FileDiff, sessionId?: string, turnId?: string): void {
    this.entries.set(toolCallId, { diff, pending: false, ...(sessionId && turnId ? { applied: { sessionId, turnId } } : {}) });
  }

  diff(toolCallId: string): FileDiff | undefined {
    return this.entries.get(toolCallId)?.diff;
  }

  appliedEdit(toolCallId: string | undefined): AppliedEdit | undefined {
    return toolCallId === undefined ? undefined : this.entries.get(toolCallId)?.applied;
  }

  isPending(toolCallId: string | undefined): boolean {
    return toolCallId !== undefined && this.entries.get(toolCallId)?.pending === true;
  }

  /** The right-hand side a diff of ``toolCallId`` opens with now. */
  newSide(toolCallId: string): DiffSide {
    return this.isPending(toolCallId) ? 'proposed' : 'after';
  }

  /** The context keys' values: the "proposed" paths of pending reviews, the "after" paths of rewindable edits. */
  titleBarKeys(): { [PENDING_REVIEWS_KEY]: string[]; [APPLIED_EDITS_KEY]: string[] } {
    const pending: string[] = [], applied: string[] = [];
    for (const [id, e] of this.entries) {
      if (e.pending) pending.push(diffSidePath(id, 'proposed', e.diff.path));
      else if (e.applied) applied.push(diffSidePath(id, 'after', e.diff.path));
    }
    return { [PENDING_REVIEWS_KEY]: pending, [APPLIED_EDITS_KEY]: applied };
  }
}
