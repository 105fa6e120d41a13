// The conversation's tool cards: one folded card per tool call (arguments, status badge, result), with the
// artifact link of a large result and, for an applied edit, "Show diff" and "Rewind this edit". The buttons carry
// data-action/data-artifact; chat.ts turns clicks on them into messages to the extension.
import type { FileDiff, SessionUpdate } from '../rpc/protocol';
import { clip, fmtTokens, h, prettyArgs } from './dom';
import { type ChildProgress, childProgress, childSummary } from './subagents';
import { cardTitle, toolBadge } from './toolBadges';

function badgeOf(tool: string): HTMLElement[] {
  const badge = toolBadge(tool);
  return badge ? [h('span', { class: 'tool-badge', text: badge.text, title: badge.title })] : [];
}

export class ToolCards {
  private readonly cards = new Map<string, HTMLElement>();
  private readonly artifactSizes = new Map<string, string>(); // artifact id -> "12.3 KB, 400 lines", once known
  private readonly children = new Map<string, ChildProgress>(); // task toolCallId -> its subagent's progress

  constructor(private readonly log: HTMLElement) {}

  /** The card of a tool call, if one is shown. */
  get(toolCallId: string): HTMLElement | undefined {
    return this.cards.get(toolCallId);
  }

  /** Another session is shown: its cards are new ones. */
  clear(): void {
    this.cards.clear();
    this.children.clear();
  }

  add(id: string, tool: string, args: unknown, title?: string): HTMLElement {
    const status = h('span', { class: 'tool-status running', text: 'running' });
    const result = h('div', { class: 'tool-result' });
    const card = h('details', { class: 'tool-card', 'data-tool-call': id },
      h('summary', {}, ...badgeOf(tool), h('span', { class: 'tool-name', text: tool }), h('span', { class: 'tool-title', text: cardTitle(tool, title) }), status),
      h('div', { class: 'tool-label', text: 'Arguments' }),
      h('pre', { class: 'tool-args', text: prettyArgs(args) }),
      result);
    this.cards.set(id, card);
    this.log.append(card);
    return card;
  }

  result(id: string, tool: string, status: string, content: string, artifactId?: string, diff?: FileDiff,
    turnId?: string): void {
    const card = this.cards.get(id) ?? this.add(id, tool, {});
    const badge = card.querySelector('.tool-status')!;
    badge.className = `tool-status ${status}`;
    badge.textContent = status;
    const result = card.querySelector('.tool-result')!;
    const lines = content.split('\n').length;
    result.replaceChildren(h('details', { class: 'tool-output' },
      h('summary', { text: `Result (${fmtTokens(lines)} lines)` }), h('pre', { text: clip(content) })));
    if (artifactId) this.artifactLink(id, artifactId);
    if (diff && status === 'ok') {
      result.append(h('div', { class: 'edit-actions' },
        h('button', { class: 'diff-link', 'data-action': 'open-diff', 'data-call': id, title: 'Open the applied change in a diff editor', text: `Show diff of ${diff.path}` }),
        ...(turnId ? [h('button', { class: 'rewind-edit', 'data-action': 'rewind-edit', 'data-turn': turnId, 'data-call': id,
          title: 'Put the file back as it was before this edit (and later ones)', text: 'Rewind this edit' })] : [])));
    }
  }

  /** A subagent's update (B-SUB-1): the collapsible card inside its parent's task card, open while it runs. */
  child(parentToolCallId: string, childSessionId: string, u: SessionUpdate['update']): void {
    const card = this.cards.get(parentToolCallId);
    if (!card) return;
    const p = childProgress(this.children.get(parentToolCallId), childSessionId, u);
    this.children.set(parentToolCallId, p);
    let box = card.querySelector<HTMLDetailsElement>(':scope > details.subagent-card');
    if (!box) {
      box = h('details', { class: 'subagent-card', open: true, 'data-child-session': childSessionId });
      card.querySelector('.tool-result')!.before(box);
    }
    box.dataset.state = p.state;
    if (p.state !== 'running') box.open = false;
    box.replaceChildren(h('summary', { text: childSummary(p) }),
      h('ol', { class: 'subagent-steps' }, ...p.lines.slice(-50).map((line) => h('li', { text: line }))));
  }

  artifactLink(toolCallId: string, artifactId: string, size?: string): void {
    const card = this.cards.get(toolCallId);
    const existing = card?.querySelector(`[data-artifact="${CSS.escape(artifactId)}"]`);
    if (size) this.artifactSizes.set(artifactId, size);
    size ??= this.artifactSizes.get(artifactId);
    const label = `Open artifact ${artifactId}${size ? ` (${size})` : ''}`;
    if (existing) {
      if (size) existing.textContent = label;
      return;
    }
    const link = h('button', { class: 'artifact-link', 'data-artifact': artifactId, title: 'Open the full output read-only in an editor', text: label });
    (card?.querySelector('.tool-result') ?? this.log).append(link);
  }

  /** The turn ended: calls still shown as running never got a result. */
  stopRunning(): void {
    for (const card of this.cards.values()) {
      const badge = card.querySelector('.tool-status.running');
      if (badge) (badge.className = 'tool-status error'), (badge.textContent = 'stopped');
    }
  }
}
