// requestApproval in the sidebar: each open request is an inline card (its diff opened for review beside it),
// answered from the card or the diff editor's title bar, withdrawn when its turn ends or the server dies. With no
// sidebar to show it in, a notification with the same three choices answers it.
import * as vscode from 'vscode';
import type { DiffDocuments } from '../diffs';
import type { ApprovalDecision, RequestApprovalParams } from '../rpc/protocol';
import type { ToWebview } from './messages';
import { outsideSandboxMark } from '../sandbox';

interface PendingApproval {
  params: RequestApprovalParams;
  resolve: (d: ApprovalDecision) => void;
}

/** What the approvals need of the sidebar view. */
export interface ApprovalView {
  post(msg: ToWebview): void;
  exists(): boolean;
  visible(): boolean;
  reveal(): Promise<boolean>;
}

type Cancellation = vscode.CancellationToken | { onCancellationRequested: vscode.Event<unknown> };

export class PendingApprovals {
  private readonly pending = new Map<string, PendingApproval>();
  private seq = 0;

  constructor(private readonly view: ApprovalView, private readonly diffs: DiffDocuments) {}

  /** The client's approval handler: resolves with the decision (reject when the server cancels the request). */
  async ask(params: RequestApprovalParams, token: Cancellation): Promise<ApprovalDecision> {
    if (!this.view.exists() && !(await this.view.reveal())) {
      // No sidebar to show it in: fall back to a notification with the same three choices.
      const outside = outsideSandboxMark(params); // B-SBX-3: said first, also without the sidebar
      // Only the choices the request offers (no "Allow Always" where nothing could be remembered)
      const offered = params.options?.length ? params.options : ['allowOnce', 'allowAlways', 'reject'];
      const labels = (['allowOnce', 'allowAlways', 'reject'] as const).filter((o) => offered.includes(o))
        .map((o) => ({ allowOnce: 'Allow Once', allowAlways: 'Allow Always', reject: 'Reject' })[o]);
      const pick = await vscode.window.showWarningMessage(`Threadline: ${outside ? `${outside}. ` : ''}${params.title}`, { detail: params.detail }, ...labels);
      return pick === 'Allow Once' ? 'allowOnce' : pick === 'Allow Always' ? 'allowAlways' : 'reject';
    }
    const requestId = `a${++this.seq}`;
    if (params.diff) {
      this.diffs.propose(params.toolCallId, params.diff);
      void this.diffs.open(params.toolCallId);
    }
    return new Promise<ApprovalDecision>((resolve) => {
      this.pending.set(requestId, { params, resolve });
      token.onCancellationRequested(() => {
        const pending = this.pending.get(requestId);
        if (pending) this.close(requestId, pending, 'reject', undefined);
      });
      this.view.post({ type: 'approval', requestId, params });
      if (!this.view.visible()) void this.view.reveal();
    });
  }

  /** A (re)loaded webview shows the cards still open. */
  repost(): void {
    for (const [requestId, p] of this.pending) this.view.post({ type: 'approval', requestId, params: p.params });
  }

  /** A card's button. */
  answer(requestId: string, decision: ApprovalDecision): void {
    const pending = this.pending.get(requestId);
    if (pending) this.close(requestId, pending, decision, decision);
  }

  /** The diff editor's title-bar Allow/Reject: answer the approval of the call shown there. */
  answerToolCall(toolCallId: string | undefined, decision: ApprovalDecision): void {
    for (const [id, p] of this.pending) if (p.params.toolCallId === toolCallId) this.answer(id, decision);
  }

  /** The turn ended (e.g. cancelled) with approvals still open: they no longer matter. */
  withdraw(sessionId: string): void {
    for (const [id, p] of this.pending) {
      if (p.params.sessionId === sessionId) this.close(id, p, 'reject', undefined);
    }
  }

  /** The server went away: nothing is waiting for the answers any more. */
  withdrawAll(): void {
    for (const [id, p] of this.pending) this.close(id, p, 'reject', undefined);
  }

  /** Every way an approval ends: the server gets its decision, the card closes, its diff loses Allow/Reject. */
  private close(requestId: string, pending: PendingApproval, decision: ApprovalDecision, shown: ApprovalDecision | undefined): void {
    this.pending.delete(requestId);
    this.diffs.settle(pending.params.toolCallId);
    pending.resolve(decision);
    this.view.post({ type: 'approvalClosed', requestId, ...(shown ? { decision: shown } : {}) });
  }
}
