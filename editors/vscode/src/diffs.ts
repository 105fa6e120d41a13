// Edit diffs in VS Code's own diff editor: each side is a read-only virtual document
// (threadline-diff:/<toolCallId>/<before|after>/<path>), held in memory for the session's lifetime in the window.
// An approval's diff editor carries Allow/Reject in its title bar (package.json menus, when the scheme matches).
import * as vscode from 'vscode';
import type { FileDiff } from './rpc/protocol';

export const DIFF_SCHEME = 'threadline-diff';

export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly diffs = new Map<string, FileDiff>(); // by tool call
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  remember(toolCallId: string, diff: FileDiff): void {
    this.diffs.set(toolCallId, diff);
  }

  has(toolCallId: string): boolean {
    return this.diffs.has(toolCallId);
  }

  /** Open the change of ``toolCallId`` side by side; returns the "after" document's URI (what the title bar acts on). */
  async open(toolCallId: string, label: string): Promise<vscode.Uri | undefined> {
    const diff = this.diffs.get(toolCallId);
    if (!diff) return undefined;
    const side = (which: string, text: string) => {
      const uri = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${toolCallId}/${which}/${diff.path}` });
      this.texts.set(uri.toString(), text);
      this.changed.fire(uri);
      return uri;
    };
    const before = side('before', diff.oldText);
    const after = side('after', diff.newText);
    await vscode.commands.executeCommand('vscode.diff', before, after, `${diff.path} (${label})`, { preview: true });
    return after;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** The tool call shown in a diff editor's document, if it is one of ours. */
  static toolCallOf(uri: vscode.Uri | undefined): string | undefined {
    return uri?.scheme === DIFF_SCHEME ? uri.path.split('/')[1] : undefined;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
