// The Tasks view (docs/WORKTREES.md): the worktree sessions of the server (the daemon's, when the extension uses
// it) with branch, state and diff stat; "Open Diff" shows a task's changes against its base, "Merge" and "Discard"
// call mergeWorktree and discardWorktree. The diff is a read-only document named after the branch (closing it
// asks nothing, as an untitled one would). Refreshed when a turn ends and on demand.
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { MergeWorktreeResult } from './rpc/protocol';
import type { ServerManager } from './serverManager';
import { taskDiff } from './sidebar/taskDiff';
import { mergeMessage, taskRows, type TaskRow } from './sidebar/tasks';

/** A task's diff: a read-only document named after its branch (threadline-task-diff:/threadline/NAME.diff). */
export const TASK_DIFF_SCHEME = 'threadline-task-diff';

export class TasksView implements vscode.TreeDataProvider<TaskRow>, vscode.TextDocumentContentProvider, vscode.Disposable {
  static readonly viewId = 'threadline.tasks';
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly diffChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.diffChanged.event;
  private readonly diffs = new Map<string, string>();
  rows: TaskRow[] = [];

  constructor(private readonly server: ServerManager) {}

  refresh(): void {
    this.changed.fire();
  }

  async getChildren(element?: TaskRow): Promise<TaskRow[]> {
    if (element) return [];
    const { sessions } = await this.server.client.request('listSessions', { limit: 200, includeChildren: true });
    this.rows = taskRows(sessions);
    return this.rows;
  }

  getTreeItem(row: TaskRow): vscode.TreeItem {
    const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
    item.id = row.sessionId;
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.contextValue = row.contextValue;
    item.iconPath = new vscode.ThemeIcon(row.worktree.state === 'active' ? 'git-branch' : row.worktree.state === 'merged' ? 'git-merge' : 'trash');
    item.command = { command: 'threadline.tasks.openDiff', title: 'Open Diff', arguments: [row] };
    return item;
  }

  private row(arg: TaskRow | string | undefined): TaskRow {
    const id = typeof arg === 'string' ? arg : arg?.sessionId;
    const found = this.rows.find((r) => r.sessionId === id);
    if (!found) throw new Error('pick a task in the Tasks view');
    return found;
  }

  /** The task's changes against its base (committed or not, new files too) in a read-only diff document. */
  async openDiff(arg?: TaskRow | string): Promise<vscode.TextDocument> {
    const w = this.row(arg).worktree;
    if (!fs.existsSync(w.path)) throw new Error(`the worktree of ${w.branch} was discarded`);
    const text = await taskDiff(w.path, w.base);
    const uri = vscode.Uri.from({ scheme: TASK_DIFF_SCHEME, path: `/${w.branch}.diff` });
    this.diffs.set(uri.toString(), text || `(no changes against ${w.base})\n`);
    this.diffChanged.fire(uri); // an open one shows the new text
    const doc = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(uri), 'diff');
    await vscode.window.showTextDocument(doc, { preview: false });
    return doc;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.diffs.get(uri.toString()) ?? '';
  }

  async merge(arg?: TaskRow | string): Promise<MergeWorktreeResult> {
    const row = this.row(arg);
    const result = await this.server.client.request('mergeWorktree', { sessionId: row.sessionId });
    const message = mergeMessage(row.worktree.branch, result);
    void (result.merged ? vscode.window.showInformationMessage(message) : vscode.window.showWarningMessage(message));
    this.refresh();
    return result;
  }

  async discard(arg?: TaskRow | string): Promise<boolean> {
    const row = this.row(arg);
    const { discarded } = await this.server.client.request('discardWorktree', { sessionId: row.sessionId });
    void vscode.window.showInformationMessage(`Threadline: the worktree of ${row.worktree.branch} was discarded (the branch stays).`);
    this.refresh();
    return discarded;
  }

  dispose(): void {
    this.changed.dispose();
    this.diffChanged.dispose();
  }
}
