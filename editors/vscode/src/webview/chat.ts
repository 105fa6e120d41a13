// The chat sidebar: session bar, the context strip (contextStrip.ts: meter, model, MCP servers), transcript
// (streamed text, reasoning, tool cards (toolCards.ts), approvals (approvalCards.ts), compaction notices) and the
// composer (composer.ts: the message box, its buttons and completions). It renders what the extension forwards;
// it never talks to the server.
import { ApprovalCards } from './approvalCards';
import { Composer } from './composer';
import type { FromWebview, ToWebview } from '../sidebar/messages';
import type {
  EventItem, FileDiff, PlanEntry, SessionInfo, TranscriptItem, Update,
} from '../rpc/protocol';
import { ContextStrip } from './contextStrip';
import { fmtBytes, fmtTokens, h } from './dom';
import { interleaveCompactions, storedDiffs } from './history';
import { planItems, planProgress } from './issue33';
import { budgetText, cachedShare, sessionCost } from './meter';
import { renderMarkdown } from './markdown';
import { ToolCards } from './toolCards';

type Post = (msg: FromWebview) => void;

interface AssistantBlock {
  el: HTMLElement;
  body: HTMLElement;
  reasoning?: { details: HTMLDetailsElement; pre: HTMLElement; text: string };
  text: string;
  frame?: number;
}

export class Chat {
  private currentId: string | undefined;
  private sessions: SessionInfo[] = [];
  private running = false;
  private assistant: AssistantBlock | undefined;
  private historyDiffs = new Map<string, FileDiff>(); // a resumed session's applied edits (fileDiff events)
  private readonly approvals: ApprovalCards;
  private pendingUsers: HTMLElement[] = []; // sent, not yet confirmed by a userMessage update
  private readonly plan = h('section', { id: 'plan', class: 'plan', 'aria-label': 'Plan', hidden: true });

  private readonly sessionSelect = h('select', { id: 'session', 'aria-label': 'Session' });
  private readonly banner = h('div', { id: 'banner', class: 'banner', role: 'status', hidden: true });
  private readonly strip: ContextStrip;
  private readonly log = h('main', { id: 'log', class: 'log', role: 'log', 'aria-label': 'Conversation', tabindex: 0 });
  private readonly cards = new ToolCards(this.log);
  private readonly composer: Composer;

  constructor(private readonly root: HTMLElement, private readonly post: Post) {
    this.strip = new ContextStrip(post);
    this.composer = new Composer(post, (text, queue) => this.send(text, queue));
    this.approvals = new ApprovalCards(this.log, this.cards, post, (force) => this.scroll(force));
    const btn = (id: string, label: string, title: string, msg: FromWebview) => {
      const b = h('button', { id, class: 'icon', title, 'aria-label': title, text: label });
      b.addEventListener('click', () => this.post(msg));
      return b;
    };
    const toolbar = h('header', { class: 'toolbar' },
      this.sessionSelect,
      btn('new-session', '+ New', 'New session', { type: 'newSession' }),
      btn('fork-session', 'Fork', 'Fork this session', { type: 'forkSession' }),
      btn('delete-session', 'Delete', 'Delete this session', { type: 'deleteSession' }),
      btn('context-view', 'Context', 'Show the context view', { type: 'showContextView' }),
      btn('compact-now', 'Compact', 'Compact now (optionally with a focus to keep)', { type: 'compact' }));
    root.append(toolbar, ...this.strip.elements, this.banner, this.plan, this.log, this.composer.element);

    this.sessionSelect.addEventListener('change', () => {
      if (this.sessionSelect.value) this.post({ type: 'selectSession', sessionId: this.sessionSelect.value });
    });
    root.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this.running) this.post({ type: 'cancel' });
    });
    this.log.addEventListener('click', (e) => {
      const target = (e.target as HTMLElement).closest('[data-artifact]') as HTMLElement | null;
      if (target) this.post({ type: 'openArtifact', artifactId: target.dataset.artifact! });
      const action = (e.target as HTMLElement).closest('[data-action]') as HTMLElement | null;
      const d = action?.dataset ?? {};
      if (d.action === 'rewind-turn' && d.turn) this.post({ type: 'rewindTurn', turnId: d.turn, text: d.text });
      if (d.action === 'rewind-edit' && d.turn && d.call) this.post({ type: 'rewindEdit', turnId: d.turn, toolCallId: d.call });
      if (d.action === 'open-diff' && d.call) this.post({ type: 'openDiff', toolCallId: d.call });
    });
    this.renderEmpty();
  }

  handle(msg: ToWebview): void {
    if (this.composer.handle(msg)) return;
    switch (msg.type) {
      case 'server': return this.setServer(msg.state, msg.message);
      case 'sessions': return this.setSessions(msg.sessions, msg.currentId);
      case 'session': return this.loadSession(msg.session.sessionId, msg.history, msg.events ?? []);
      case 'update':
        if (msg.params.parentSessionId && msg.params.parentToolCallId) { // a subagent's: inside its parent's task card
          return msg.params.parentSessionId === this.currentId
            ? this.cards.child(msg.params.parentToolCallId, msg.params.sessionId, msg.params.update) : undefined;
        }
        return msg.params.sessionId === this.currentId ? this.apply(msg.params.update, msg.params.turnId ?? undefined) : undefined;
      case 'approval': return this.approvals.show(msg.requestId, msg.params);
      case 'approvalClosed': return this.approvals.close(msg.requestId, msg.decision);
      case 'turn':
        if (msg.result?.command) this.note('info command', msg.result.command.output); // a built-in command's answer
        return this.setTurn(msg.running, msg.result?.stopReason, msg.error ?? msg.result?.error?.message);
      case 'meter': return this.strip.setMeter(msg.contextTokens, msg.contextWindowTokens, msg.estimated, undefined, msg.budget);
      case 'error': return void this.note('error', msg.message);
      case 'mcpServers': return this.strip.setMcpServers(msg.servers);
      case 'model': return this.strip.setModel(msg.label);
      case 'sandbox': return this.strip.setSandbox(msg.text, msg.title, msg.warn);
    }
  }

  // --- sessions -----------------------------------------------------------------------------------------

  private setSessions(sessions: SessionInfo[], currentId?: string): void {
    this.sessions = sessions;
    if (currentId !== undefined) this.currentId = currentId;
    this.sessionSelect.replaceChildren(
      ...(this.currentId && !sessions.some((s) => s.sessionId === this.currentId)
        ? [h('option', { value: this.currentId, text: 'Current session' })] : []),
      ...sessions.map((s) => h('option', { value: s.sessionId, text: `${s.title || 'Untitled'} · ${s.messageCount} msgs · ${s.updatedAt.slice(0, 16).replace('T', ' ')}` })),
    );
    if (!sessions.length && !this.currentId) this.sessionSelect.append(h('option', { value: '', text: 'No sessions yet' }));
    this.sessionSelect.value = this.currentId ?? '';
  }

  private loadSession(sessionId: string, history: TranscriptItem[], events: EventItem[]): void {
    this.currentId = sessionId;
    // The stored totals until this session's next usage update brings its running ones
    this.strip.setCost(sessionCost(this.sessions.find((s) => s.sessionId === sessionId)?.totals?.costUsd));
    this.sessionSelect.value = sessionId;
    this.log.replaceChildren();
    this.cards.clear();
    this.approvals.clear();
    this.assistant = undefined;
    this.pendingUsers = [];
    const seenTurns = new Set<string>();
    this.historyDiffs = storedDiffs(events);
    const planned = events.filter((e) => e.kind === 'planUpdated').pop();
    this.showPlan(planned ? (planned.payload.entries as PlanEntry[]) : []);
    for (const entry of interleaveCompactions(history, events)) {
      if ('item' in entry) this.renderHistoryItem(entry.item, seenTurns);
      else this.compaction(entry.compaction.mode, entry.compaction.beforeTokens, entry.compaction.afterTokens, entry.compaction.summary);
    }
    if (!history.length) this.renderEmpty();
    this.scroll(true);
  }

  private renderEmpty(): void {
    this.log.append(h('div', { class: 'empty', text: 'Start by describing a task. Threadline reads, edits and runs things in this workspace, asking before writes and commands.' }));
  }

  private renderHistoryItem(item: TranscriptItem, seenTurns: Set<string>): void {
    const interrupted = item.status === 'interrupted';
    if (item.role === 'user') {
      const first = item.turnId != null && !seenTurns.has(item.turnId); // a turn's own message, not a steer
      if (item.turnId) seenTurns.add(item.turnId);
      this.log.append(this.userBubble(item.typed ?? item.content ?? '', first ? item.turnId ?? undefined : undefined));
    } else if (item.role === 'assistant') {
      const block = this.newAssistant();
      if (item.reasoning) this.appendReasoning(block, item.reasoning);
      block.text = item.content ?? '';
      this.renderAssistantText(block);
      if (interrupted) block.el.append(h('div', { class: 'status-line', text: 'Interrupted' }));
      for (const call of item.toolCalls ?? []) this.cards.add(call.id, call.function.name, call.function.arguments);
      this.assistant = undefined;
    } else if (item.role === 'tool' && item.toolCallId) {
      const artifact = /^\[artifact ([\w.-]+)\]/.exec(item.content ?? '');
      this.cards.result(item.toolCallId, item.name ?? 'tool', item.toolStatus ?? 'ok', item.content ?? '', artifact?.[1],
        this.historyDiffs.get(item.toolCallId), item.turnId ?? undefined);
    } // system items (the session's frozen prompt) are not part of the conversation shown to people
  }

  // --- live updates -------------------------------------------------------------------------------------

  private apply(u: Update, turnId?: string): void {
    this.log.querySelector(':scope > .empty')?.remove();
    switch (u.kind) {
      case 'turnStarted':
        this.assistant = undefined;
        return this.setTurn(true);
      case 'userMessage': {
        const shown = u.typed ?? u.text; // a slash command's expansion: show what was typed
        const i = this.pendingUsers.findIndex((el) => el.querySelector('.text')?.textContent === shown);
        const bubble = i >= 0 ? this.pendingUsers.splice(i, 1)[0] : this.userBubble(shown);
        bubble.classList.remove('pending');
        if (i < 0) this.log.append(bubble);
        if (turnId && !u.steered) this.addRewind(bubble, turnId, shown);
        if (u.steered) bubble.classList.add('steered');
        break;
      }
      case 'assistantDelta': {
        const block = this.assistant ?? this.newAssistant();
        block.text += u.text;
        this.scheduleRender(block);
        break;
      }
      case 'reasoningDelta':
        this.appendReasoning(this.assistant ?? this.newAssistant(), u.text);
        break;
      case 'assistantMessage': {
        const block = this.assistant ?? this.newAssistant();
        if (u.content) block.text = u.content;
        if (u.reasoning && !block.reasoning) this.appendReasoning(block, u.reasoning);
        this.renderAssistantText(block);
        if (!block.text && !block.reasoning) block.el.remove();
        if (u.interrupted) block.el.append(h('div', { class: 'status-line', text: 'Interrupted' }));
        this.assistant = undefined;
        break;
      }
      case 'toolCall':
        this.assistant = undefined;
        this.cards.add(u.toolCallId, u.tool, u.arguments, u.title ?? undefined);
        break;
      case 'toolResult':
        this.cards.result(u.toolCallId, u.tool, u.status, u.content, u.artifactId ?? undefined, u.diff ?? undefined, turnId);
        break;
      case 'artifactCreated':
        this.cards.artifactLink(u.toolCallId, u.artifactId, `${fmtBytes(u.totalBytes)}, ${fmtTokens(u.totalLines)} lines`);
        break;
      case 'contextCompacting':
        this.strip.setCompacting(u.beforeTokens);
        return; // a state of the meter until contextCompacted, not a log entry
      case 'contextCompacted':
        this.compaction(u.mode, u.beforeTokens, u.afterTokens, u.summary);
        break;
      case 'usage':
        this.strip.setCost(sessionCost(u.totals?.costUsd), true);
        this.strip.setMeter(u.contextTokens, u.contextWindowTokens, false, cachedShare(u.cachedInputTokens ?? undefined, u.inputTokens),
          budgetText(u.budgetSource, u.budgetTokens, fmtTokens));
        break;
      case 'turnCompleted':
        this.strip.setCompacting(undefined); // a turn cancelled mid-compaction
        this.setTurn(false, u.stopReason, u.error?.message);
        break;
      case 'notice':
        this.note(u.level, u.message);
        break;
      case 'hookRun': {
        // Shown when a hook blocked, failed or left a note; a quiet run that said nothing is not a log entry.
        const said = u.failure ? `failed (${u.failure})` : u.decision ?? '';
        const note = u.reason ?? u.additionalContext ?? '';
        if (!u.failure && !note && u.decision !== 'block' && u.decision !== 'deny') return;
        const blocked = !!u.failure || u.decision === 'block' || u.decision === 'deny';
        const head = `${u.event} hook${u.tool ? ` on ${u.tool}` : ''}${said ? ` ${said}` : ''}`;
        this.note(blocked ? 'warning' : 'info', `${head}: ${note || u.command}`);
        break;
      }
      case 'plan':
        this.showPlan(u.entries);
        return; // the checklist above the log, not a log entry
      case 'mcpServerStatus':
        this.strip.setMcpServer(u.name, u.state, u.transport, u.reason ?? undefined, u.tools?.length);
        return; // a status strip, not a log entry
    }
    this.scroll();
  }

  /** The agent's latest plan as a checklist above the conversation (issue 33); hidden while there is none. */
  private showPlan(entries: PlanEntry[]): void {
    this.plan.hidden = entries.length === 0;
    this.plan.replaceChildren(
      h('div', { class: 'plan-head', text: `Plan · ${planProgress(entries)}` }),
      h('ul', { class: 'plan-list' }, ...planItems(entries).map((item) =>
        h('li', { class: `plan-step ${item.status}`, 'data-status': item.status },
          h('span', { class: 'plan-mark', 'aria-hidden': 'true', text: item.mark }), h('span', { text: item.step })))));
  }

  private userBubble(text: string, turnId?: string): HTMLElement {
    const el = h('div', { class: 'msg user', 'aria-label': 'You' }, h('div', { class: 'who', text: 'You' }), h('div', { class: 'text', text }));
    if (turnId) this.addRewind(el, turnId, text);
    return el;
  }

  /** The turn's menu: rewind its file changes (and, by choice, the conversation) to before it. */
  private addRewind(bubble: HTMLElement, turnId: string, text: string): void {
    if (bubble.querySelector('[data-action="rewind-turn"]')) return;
    bubble.dataset.turn = turnId;
    bubble.querySelector('.who')!.append(h('button', {
      class: 'icon turn-menu', 'data-action': 'rewind-turn', 'data-turn': turnId, 'data-text': text,
      title: 'Rewind files (and optionally the conversation) to before this turn', 'aria-label': 'Rewind to before this turn', text: 'Rewind…',
    }));
  }

  private newAssistant(): AssistantBlock {
    const body = h('div', { class: 'markdown' });
    const el = h('div', { class: 'msg assistant', 'aria-label': 'Threadline' }, h('div', { class: 'who', text: 'Threadline' }), body);
    this.log.append(el);
    this.assistant = { el, body, text: '' };
    return this.assistant;
  }

  private appendReasoning(block: AssistantBlock, text: string): void {
    if (!block.reasoning) {
      const pre = h('div', { class: 'reasoning-text' });
      const details = h('details', { class: 'reasoning' }, h('summary', { text: 'Reasoning' }), pre);
      block.body.before(details);
      block.reasoning = { details, pre, text: '' };
    }
    block.reasoning.text += text;
    block.reasoning.pre.textContent = block.reasoning.text;
  }

  private scheduleRender(block: AssistantBlock): void {
    if (block.frame) return;
    block.frame = requestAnimationFrame(() => {
      block.frame = undefined;
      this.renderAssistantText(block);
      this.scroll();
    });
  }

  private renderAssistantText(block: AssistantBlock): void {
    if (block.frame) cancelAnimationFrame(block.frame), (block.frame = undefined);
    block.body.innerHTML = renderMarkdown(block.text); // markdown-it with html disabled: escaped, no raw HTML
  }

  private compaction(mode: string, before: number, after: number, summary: string): void {
    const el = h('details', { class: 'notice compaction', 'data-mode': mode },
      h('summary', {}, h('strong', { text: 'Context compacted' }), ` (${mode}): ${fmtTokens(before)} → ${fmtTokens(after)} tokens`),
      h('pre', { class: 'summary', text: summary || '(no summary: older tool outputs were replaced by placeholders)' }));
    this.log.append(el);
    this.strip.dropTo(after);
  }

  private note(level: string, message: string): HTMLElement {
    const el = h('div', { class: `notice ${level}`, role: level === 'error' ? 'alert' : 'status', text: message });
    this.log.append(el);
    this.scroll();
    return el;
  }

  // --- turn, server ------------------------------------------------------------------------------

  private setTurn(running: boolean, stopReason?: string, error?: string): void {
    const was = this.running;
    this.running = running;
    this.composer.setRunning(running);
    this.root.classList.toggle('running', running);
    if (running || !was) return;
    this.assistant = undefined;
    this.cards.stopRunning();
    this.approvals.closeAll();
    if (stopReason === 'cancelled') this.note('warning', 'Turn cancelled.');
    else if (stopReason === 'maxIterations') this.note('warning', 'Stopped: the turn reached its iteration limit.');
    else if (stopReason === 'error' || error) this.note('error', `Turn failed: ${error ?? 'unknown error'}`);
  }

  private setServer(state: string, message?: string): void {
    this.root.dataset.server = state;
    const text = state === 'running' ? '' : state === 'starting' ? 'Starting the Threadline server…'
      : message ?? (state === 'crashed' ? 'The Threadline server stopped.' : 'The Threadline server is not running.');
    this.banner.textContent = text;
    this.banner.hidden = !text;
    this.banner.className = `banner ${state}`;
  }

  /** Idle: start a turn. While a turn runs: steer it (the default) or, with ``queue``, run after it. */
  private send(text: string, queue: boolean): void {
    this.log.querySelector(':scope > .empty')?.remove();
    const bubble = this.userBubble(text);
    bubble.classList.add('pending');
    this.pendingUsers.push(bubble);
    this.log.append(bubble);
    this.scroll(true);
    if (this.running) return this.post({ type: queue ? 'queue' : 'steer', text });
    this.setTurn(true);
    this.post({ type: 'submit', text });
  }

  private scroll(force = false): void {
    const nearBottom = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 120;
    if (force || nearBottom) this.log.scrollTop = this.log.scrollHeight;
  }
}
