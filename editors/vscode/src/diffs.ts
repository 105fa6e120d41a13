// Edit diffs in VS Code's own diff editor: each side is a read-only virtual document
// (threadline-diff:/<toolCallId>/<before|proposed|after>/<path>), held in memory for the session's lifetime in
// the window. The title bar offers Allow/Reject only on a diff whose approval is still pending, and "Rewind This
// Edit" on an applied one (package.json menus: `resourcePath in` the context keys that DiffStates computes).
import * as vscode from 'vscode';
import { DiffStates, diffSidePath, toolCallOfPath, type AppliedEdit, type DiffSide } from './diffKeys';
import type { FileDiff } from './rpc/protocol';

export const DIFF_SCHEME = 'threadline-diff';

export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly states = new DiffStates();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  /** A proposed change awaiting its approval. */
  propose(toolCallId: string, diff: FileDiff): void {
    this.states.propose(toolCallId, diff);
    this.publishKeys();
  }

  /** Its approval is no longer pending (answered, withdrawn, or the server went away). */
  settle(toolCallId: string): void {
    this.states.settle(toolCallId);
    this.publishKeys();
  }

  /** A change that was written: a live tool result, or a resumed session's stored fileDiff event. */
  remember(toolCallId: string, diff: FileDiff, sessionId?: string, turnId?: string): void {
    this.states.applied(toolCallId, diff, sessionId, turnId);
    this.publishKeys();
  }

  has(toolCallId: string): boolean {
    return this.states.diff(toolCallId) !== undefined;
  }

  appliedEdit(toolCallId: string | undefined): AppliedEdit | undefined {
    return this.states.appliedEdit(toolCallId);
  }

  /** Open the change of ``toolCallId`` side by side (a pending proposal, or the applied change); returns the
   *  right-hand document's URI (what the title bar acts on). */
  async open(toolCallId: string, label?: string): Promise<vscode.Uri | undefined> {
    const diff = this.states.diff(toolCallId);
    if (!diff) return undefined;
    const side = (which: DiffSide, text: string) => {
      const uri = vscode.Uri.from({ scheme: DIFF_SCHEME, path: diffSidePath(toolCallId, which, diff.path) });
      this.texts.set(uri.toString(), text);
      this.changed.fire(uri);
      return uri;
    };
    const before = side('before', diff.oldText);
    const pending = this.states.isPending(toolCallId);
    const after = side(this.states.newSide(toolCallId), diff.newText);
    const title = label ?? (pending ? 'proposed: Allow or Reject in the title bar' : 'Threadline edit');
    await vscode.commands.executeCommand('vscode.diff', before, after, `${diff.path} (${title})`, { preview: true });
    return after;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** The tool call shown in a diff editor's document, if it is one of ours. */
  static toolCallOf(uri: vscode.Uri | undefined): string | undefined {
    return uri?.scheme === DIFF_SCHEME ? toolCallOfPath(uri.path) : undefined;
  }

  private publishKeys(): void {
    for (const [key, paths] of Object.entries(this.states.titleBarKeys())) void vscode.commands.executeCommand('setContext', key, paths);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
