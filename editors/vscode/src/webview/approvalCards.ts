// Approval requests as cards in the conversation: the question, its detail (an unconfined command marked
// plainly), a link to review an edit's diff and a button per allowed answer. An answered, withdrawn or
// ended-with-the-turn request keeps its card, which then says the outcome. A click posts an ``approve`` message;
// the extension side (sidebar/approvals.ts) answers requestApproval with it.
import type { FromWebview } from '../sidebar/messages';
import type { RequestApprovalParams } from '../rpc/protocol';
import { h } from './dom';
import { outsideSandboxMark } from '../sandbox';
import type { ToolCards } from './toolCards';

type Post = (msg: FromWebview) => void;

export class ApprovalCards {
  private readonly shown = new Map<string, HTMLElement>(); // request id -> its card, answered or not

  constructor(
    private readonly log: HTMLElement,
    private readonly cards: ToolCards,
    private readonly post: Post,
    private readonly scroll: (force: boolean) => void,
  ) {}

  /** Another session is shown: its requests are new ones. */
  clear(): void {
    this.shown.clear();
  }

  /** The turn ended: every request still open is no longer needed. */
  closeAll(): void {
    for (const id of this.shown.keys()) this.close(id);
  }

  /** A card for the request, under the tool call's card (or its subagent task's) when shown, else at the end. */
  show(requestId: string, p: RequestApprovalParams): void {
    const labels: Record<string, string> = { allowOnce: 'Allow once', allowAlways: 'Allow always', reject: 'Reject' };
    const buttons = h('div', { class: 'approval-actions' });
    const outside = outsideSandboxMark(p); // B-SBX-3: an unconfined command is marked plainly
    const card = h('section', { class: outside ? 'approval outside-sandbox' : 'approval', role: 'group', 'aria-label': `Approval: ${p.title}`, 'data-request': requestId },
      h('div', { class: 'approval-title' }, h('span', { class: 'approval-icon', text: outside ? '!' : '?' }), h('span', { text: p.title || p.tool })),
      ...(outside ? [h('div', { class: 'sandbox-mark', text: outside })] : []),
      h('pre', { class: 'approval-detail', text: p.detail }),
      ...(p.diff ? [h('button', { class: 'diff-link', 'data-action': 'open-diff', 'data-call': p.toolCallId, text: `Review diff of ${p.diff.path}` })] : []),
      buttons);
    for (const option of p.options?.length ? p.options : ['allowOnce', 'allowAlways', 'reject'] as const) {
      const b = h('button', { class: option === 'reject' ? 'danger' : option === 'allowOnce' ? 'primary' : '', 'data-decision': option, text: labels[option] ?? option });
      b.addEventListener('click', () => {
        this.post({ type: 'approve', requestId, decision: option });
        this.close(requestId, option);
      });
      buttons.append(b);
    }
    this.shown.set(requestId, card);
    const toolCard = this.cards.get(p.parentToolCallId ?? p.toolCallId); // a subagent asks under its task card
    if (toolCard) toolCard.after(card);
    else this.log.append(card);
    this.scroll(true);
    (buttons.firstElementChild as HTMLElement | null)?.focus();
  }

  /** Say the request's outcome in its card (``decision`` undefined: withdrawn, no longer needed). */
  close(requestId: string, decision?: string): void {
    const card = this.shown.get(requestId);
    if (!card || card.classList.contains('answered')) return;
    card.classList.add('answered');
    const words: Record<string, string> = { allowOnce: 'Allowed once', allowAlways: 'Allowed always', reject: 'Rejected' };
    card.querySelector('.approval-actions')!.replaceChildren(h('span', { class: `decision ${decision ?? 'withdrawn'}`, text: decision ? words[decision] : 'No longer needed' }));
  }
}
