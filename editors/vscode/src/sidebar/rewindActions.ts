// Rewind and diff review from the sidebar: a turn's or an edit's rewind (confirmed from a dry run, optionally
// forking the conversation to before the turn), the Rewind Files command's turn pick, and opening an edit's diff. The words are in rewind.ts.
import * as vscode from 'vscode';
import type { DiffDocuments } from '../diffs';
import type { SidebarHost } from './host';
import { forkSeqBefore, planRewind, rewindDone, turnPickItems } from './rewind';

export class RewindActions {
  constructor(private readonly host: SidebarHost, private readonly diffs: DiffDocuments) {}

  /** A turn's menu: rewind its files (and later turns'), optionally the conversation too (a fork before it). */
  async rewindTurn(turnId: string, text?: string, toolCallId?: string, sessionId = this.host.currentSession()): Promise<void> {
    if (!sessionId) return;
    const client = this.host.server.client;
    const scope = toolCallId ? { toolCallId } : {};
    const plan = planRewind(await client.request('rewindFiles', { sessionId, toTurnId: turnId, dryRun: true, ...scope }));
    const FILES = 'Rewind Files', BOTH = 'Rewind Files and Conversation', FORCE = 'Rewind, Overwriting Conflicts';
    const choices = [FILES, ...(toolCallId ? [] : [BOTH]), ...(plan.conflicted ? [FORCE] : [])];
    const pick = await vscode.window.showWarningMessage(toolCallId ? 'Rewind this edit?' : 'Rewind to before this turn?',
      { modal: true, detail: plan.summary }, ...choices);
    if (!pick) return;
    const result = await client.request('rewindFiles', { sessionId, toTurnId: turnId, ...scope, ...(pick === FORCE ? { force: true } : {}) });
    void vscode.window.showInformationMessage(rewindDone(result));
    if (pick !== BOTH) return;
    const { turns } = await client.request('listCheckpoints', { sessionId });
    const turn = turns.find((t) => t.turnId === turnId);
    if (!turn) return;
    const { sessionId: forked } = await client.request('forkSession', { sessionId, atSeq: forkSeqBefore(turn) });
    await this.host.selectSession(forked);
    if (text) this.host.post({ type: 'prefill', text });
  }

  /** The "Rewind Files" command: pick one of the current session's turns, then its menu (rewindTurn). */
  async pickTurn(): Promise<void> {
    const sessionId = this.host.currentSession();
    if (!sessionId) return;
    const { turns } = await this.host.server.client.request('listCheckpoints', { sessionId });
    const pick = await vscode.window.showQuickPick(turnPickItems(turns), { title: 'Threadline: Rewind Files to Before a Turn' });
    if (pick) await this.rewindTurn(pick.turnId, undefined, undefined, sessionId);
  }

  /** An applied diff's title-bar "Rewind This Edit": the same as its tool card's button (of the edit's own session). */
  async rewindFromDiff(toolCallId: string | undefined): Promise<void> {
    const edit = this.diffs.appliedEdit(toolCallId);
    if (edit && toolCallId) await this.rewindTurn(edit.turnId, undefined, toolCallId, edit.sessionId);
  }

  /** The diff of a proposed or applied edit, in VS Code's diff editor. */
  async openDiff(toolCallId: string): Promise<void> {
    if (!(await this.diffs.open(toolCallId))) void vscode.window.showInformationMessage('Threadline: this edit has no diff to show.');
  }
}
