// The chat sidebar: session bar, context meter, transcript (streamed text, reasoning, tool cards, approvals,
// compaction notices) and the composer. It renders what the extension forwards; it never talks to the server.
import type { FromWebview, ToWebview } from '../sidebar/messages';
import type { EventItem, FileDiff, McpServerInfo, RequestApprovalParams, SessionInfo, TranscriptItem, Update } from '../rpc/protocol';
import { clip, fmtBytes, fmtTokens, h, prettyArgs } from './dom';
import { interleaveCompactions, storedDiffs } from './history';
import { cachedShare, meterLabel, sessionCost } from './meter';
import { renderMarkdown } from './markdown';

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
  private cost: string | undefined; // the session's cost so far ("$0.0123"), shown next to the meter when known
  private meterState: { tokens: number; windowTokens: number; estimated: boolean; cached?: string } | undefined;
  private running = false;
  private assistant: AssistantBlock | undefined;
  private readonly cards = new Map<string, HTMLElement>();
  private historyDiffs = new Map<string, FileDiff>(); // a resumed session's applied edits (fileDiff events)
  private readonly approvals = new Map<string, HTMLElement>();
  private readonly artifactSizes = new Map<string, string>();
  private pendingUsers: HTMLElement[] = []; // sent, not yet confirmed by a userMessage update

  private readonly sessionSelect = h('select', { id: 'session', 'aria-label': 'Session' });
  private readonly banner = h('div', { id: 'banner', class: 'banner', role: 'status', hidden: true });
  private readonly mcp = h('div', { id: 'mcp-servers', class: 'mcp-servers', 'aria-label': 'MCP servers', hidden: true });
  private readonly meterFill = h('div', { class: 'meter-fill' });
  private readonly meterLabel = h('span', { class: 'meter-label', text: 'Context: no request yet' });
  private readonly meter = h('div', {
    id: 'meter', class: 'meter', role: 'meter', 'aria-label': 'Context window use', 'aria-valuemin': 0, 'aria-valuemax': 100,
    'aria-valuenow': 0, tabindex: 0,
  }, h('div', { class: 'meter-track' }, this.meterFill), this.meterLabel);
  private readonly log = h('main', { id: 'log', class: 'log', role: 'log', 'aria-label': 'Conversation', tabindex: 0 });
  private readonly input = h('textarea', {
    id: 'input', rows: 3, placeholder: 'Ask Threadline… (Enter to send, Shift+Enter for a new line)', 'aria-label': 'Message',
  });
  private readonly sendBtn = h('button', { id: 'send', class: 'primary', title: 'Send (Enter)', text: 'Send' });
  private readonly cancelBtn = h('button', { id: 'cancel', title: 'Cancel the running turn (Escape)', text: 'Cancel', disabled: true });
  private readonly queueBtn = h('button', { id: 'queue', title: 'Run this message right after the running turn', text: 'Queue', hidden: true });

  constructor(private readonly root: HTMLElement, private readonly post: Post) {
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
    const composer = h('footer', { class: 'composer' }, this.input,
      h('div', { class: 'composer-actions' }, this.cancelBtn, this.queueBtn, this.sendBtn));
    root.append(toolbar, this.meter, this.mcp, this.banner, this.log, composer);

    this.sessionSelect.addEventListener('change', () => {
      if (this.sessionSelect.value) this.post({ type: 'selectSession', sessionId: this.sessionSelect.value });
    });
    this.sendBtn.addEventListener('click', () => this.submit());
    this.queueBtn.addEventListener('click', () => this.submit(true));
    this.cancelBtn.addEventListener('click', () => this.post({ type: 'cancel' }));
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
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
    switch (msg.type) {
      case 'server': return this.setServer(msg.state, msg.message);
      case 'sessions': return this.setSessions(msg.sessions, msg.currentId);
      case 'session': return this.loadSession(msg.session.sessionId, msg.history, msg.events ?? []);
      case 'update': return msg.params.sessionId === this.currentId ? this.apply(msg.params.update, msg.params.turnId ?? undefined) : undefined;
      case 'approval': return this.showApproval(msg.requestId, msg.params);
      case 'approvalClosed': return this.closeApproval(msg.requestId, msg.decision);
      case 'turn': return this.setTurn(msg.running, msg.result?.stopReason, msg.error ?? msg.result?.error?.message);
      case 'meter': return this.setMeter(msg.contextTokens, msg.contextWindowTokens, msg.estimated);
      case 'error': return void this.note('error', msg.message);
      case 'focusInput': return this.input.focus();
      case 'mcpServers': return this.setMcpServers(msg.servers);
      case 'prefill':
        this.input.value = msg.text;
        return this.input.focus();
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
    this.cost = sessionCost(this.sessions.find((s) => s.sessionId === sessionId)?.totals?.costUsd);
    this.refreshMeterLabel();
    this.sessionSelect.value = sessionId;
    this.log.replaceChildren();
    this.cards.clear();
    this.approvals.clear();
    this.assistant = undefined;
    this.pendingUsers = [];
    const seenTurns = new Set<string>();
    this.historyDiffs = storedDiffs(events);
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
      this.log.append(this.userBubble(item.content ?? '', first ? item.turnId ?? undefined : undefined));
    } else if (item.role === 'assistant') {
      const block = this.newAssistant();
      if (item.reasoning) this.appendReasoning(block, item.reasoning);
      block.text = item.content ?? '';
      this.renderAssistantText(block);
      if (interrupted) block.el.append(h('div', { class: 'status-line', text: 'Interrupted' }));
      for (const call of item.toolCalls ?? []) this.toolCard(call.id, call.function.name, call.function.arguments);
      this.assistant = undefined;
    } else if (item.role === 'tool' && item.toolCallId) {
      const artifact = /^\[artifact ([\w.-]+)\]/.exec(item.content ?? '');
      this.toolResult(item.toolCallId, item.name ?? 'tool', item.toolStatus ?? 'ok', item.content ?? '', artifact?.[1],
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
        const i = this.pendingUsers.findIndex((el) => el.querySelector('.text')?.textContent === u.text);
        const bubble = i >= 0 ? this.pendingUsers.splice(i, 1)[0] : this.userBubble(u.text);
        bubble.classList.remove('pending');
        if (i < 0) this.log.append(bubble);
        if (turnId && !u.steered) this.addRewind(bubble, turnId, u.text);
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
        this.toolCard(u.toolCallId, u.tool, u.arguments, u.title ?? undefined);
        break;
      case 'toolResult':
        this.toolResult(u.toolCallId, u.tool, u.status, u.content, u.artifactId ?? undefined, u.diff ?? undefined, turnId);
        break;
      case 'artifactCreated':
        this.artifactLink(u.toolCallId, u.artifactId, `${fmtBytes(u.totalBytes)}, ${fmtTokens(u.totalLines)} lines`);
        break;
      case 'contextCompacted':
        this.compaction(u.mode, u.beforeTokens, u.afterTokens, u.summary);
        break;
      case 'usage':
        this.cost = sessionCost(u.totals?.costUsd) ?? this.cost;
        this.setMeter(u.contextTokens, u.contextWindowTokens, false, cachedShare(u.cachedInputTokens ?? undefined, u.inputTokens));
        break;
      case 'turnCompleted':
        this.setTurn(false, u.stopReason, u.error?.message);
        break;
      case 'notice':
        this.note(u.level, u.message);
        break;
      case 'mcpServerStatus':
        this.setMcpServer(u.name, u.state, u.transport, u.reason ?? undefined, u.tools?.length);
        return; // a status strip, not a log entry
    }
    this.scroll();
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

  private toolCard(id: string, tool: string, args: unknown, title?: string): HTMLElement {
    const status = h('span', { class: 'tool-status running', text: 'running' });
    const result = h('div', { class: 'tool-result' });
    const card = h('details', { class: 'tool-card', 'data-tool-call': id },
      h('summary', {}, h('span', { class: 'tool-name', text: tool }), h('span', { class: 'tool-title', text: title ?? '' }), status),
      h('div', { class: 'tool-label', text: 'Arguments' }),
      h('pre', { class: 'tool-args', text: prettyArgs(args) }),
      result);
    this.cards.set(id, card);
    this.log.append(card);
    return card;
  }

  private toolResult(id: string, tool: string, status: string, content: string, artifactId?: string, diff?: FileDiff,
    turnId?: string): void {
    const card = this.cards.get(id) ?? this.toolCard(id, tool, {});
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

  private artifactLink(toolCallId: string, artifactId: string, size?: string): void {
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

  private showApproval(requestId: string, p: RequestApprovalParams): void {
    const labels: Record<string, string> = { allowOnce: 'Allow once', allowAlways: 'Allow always', reject: 'Reject' };
    const buttons = h('div', { class: 'approval-actions' });
    const card = h('section', { class: 'approval', role: 'group', 'aria-label': `Approval: ${p.title}`, 'data-request': requestId },
      h('div', { class: 'approval-title' }, h('span', { class: 'approval-icon', text: '?' }), h('span', { text: p.title || p.tool })),
      h('pre', { class: 'approval-detail', text: p.detail }),
      ...(p.diff ? [h('button', { class: 'diff-link', 'data-action': 'open-diff', 'data-call': p.toolCallId, text: `Review diff of ${p.diff.path}` })] : []),
      buttons);
    for (const option of p.options?.length ? p.options : ['allowOnce', 'allowAlways', 'reject'] as const) {
      const b = h('button', { class: option === 'reject' ? 'danger' : option === 'allowOnce' ? 'primary' : '', 'data-decision': option, text: labels[option] ?? option });
      b.addEventListener('click', () => {
        this.post({ type: 'approve', requestId, decision: option });
        this.closeApproval(requestId, option);
      });
      buttons.append(b);
    }
    this.approvals.set(requestId, card);
    const toolCard = this.cards.get(p.toolCallId);
    if (toolCard) toolCard.after(card);
    else this.log.append(card);
    this.scroll(true);
    (buttons.firstElementChild as HTMLElement | null)?.focus();
  }

  private closeApproval(requestId: string, decision?: string): void {
    const card = this.approvals.get(requestId);
    if (!card || card.classList.contains('answered')) return;
    card.classList.add('answered');
    const words: Record<string, string> = { allowOnce: 'Allowed once', allowAlways: 'Allowed always', reject: 'Rejected' };
    card.querySelector('.approval-actions')!.replaceChildren(h('span', { class: `decision ${decision ?? 'withdrawn'}`, text: decision ? words[decision] : 'No longer needed' }));
  }

  private compaction(mode: string, before: number, after: number, summary: string): void {
    const el = h('details', { class: 'notice compaction', 'data-mode': mode },
      h('summary', {}, h('strong', { text: 'Context compacted' }), ` (${mode}): ${fmtTokens(before)} → ${fmtTokens(after)} tokens`),
      h('pre', { class: 'summary', text: summary || '(no summary: older tool outputs were replaced by placeholders)' }));
    this.log.append(el);
    const windowTokens = Number(this.meter.dataset.window || 0);
    if (windowTokens) this.setMeter(after, windowTokens, true);
    this.meter.classList.remove('dropped');
    void this.meter.offsetWidth; // restart the animation
    this.meter.classList.add('dropped');
  }

  private note(level: string, message: string): HTMLElement {
    const el = h('div', { class: `notice ${level}`, role: level === 'error' ? 'alert' : 'status', text: message });
    this.log.append(el);
    this.scroll();
    return el;
  }

  // --- turn, meter, server ------------------------------------------------------------------------------

  private setTurn(running: boolean, stopReason?: string, error?: string): void {
    const was = this.running;
    this.running = running;
    this.cancelBtn.disabled = !running;
    this.queueBtn.hidden = !running;
    this.sendBtn.textContent = running ? 'Steer' : 'Send';
    this.sendBtn.title = running ? 'Add this to the running turn: the model reads it after the current tool (Enter)' : 'Send (Enter)';
    this.root.classList.toggle('running', running);
    if (running || !was) return;
    this.assistant = undefined;
    for (const card of this.cards.values()) {
      const badge = card.querySelector('.tool-status.running');
      if (badge) (badge.className = 'tool-status error'), (badge.textContent = 'stopped');
    }
    for (const id of this.approvals.keys()) this.closeApproval(id);
    if (stopReason === 'cancelled') this.note('warning', 'Turn cancelled.');
    else if (stopReason === 'maxIterations') this.note('warning', 'Stopped: the turn reached its iteration limit.');
    else if (stopReason === 'error' || error) this.note('error', `Turn failed: ${error ?? 'unknown error'}`);
  }

  /** `cached` (B-CACHE-5) is the last request's cached share, shown only for a request the provider answered. */
  private setMeter(tokens: number, windowTokens: number, estimated = false, cached?: string): void {
    const pct = windowTokens > 0 ? Math.min(100, (tokens / windowTokens) * 100) : 0;
    this.meterState = { tokens, windowTokens, estimated, cached };
    this.meter.dataset.tokens = String(tokens);
    if (cached) this.meter.dataset.cached = cached;
    else delete this.meter.dataset.cached;
    this.meter.dataset.window = String(windowTokens);
    this.meter.setAttribute('aria-valuenow', String(Math.round(pct)));
    this.meterFill.style.width = `${pct}%`;
    this.meter.classList.toggle('warn', pct >= 70 && pct < 90);
    this.meter.classList.toggle('full', pct >= 90);
    this.refreshMeterLabel();
  }

  /** The label again, for the session's cost changing without a new request (a session loaded). */
  private refreshMeterLabel(): void {
    if (this.cost) this.meter.dataset.cost = this.cost;
    else delete this.meter.dataset.cost;
    const m = this.meterState;
    if (!m) {
      this.meterLabel.textContent = ['Context: no request yet', this.cost].filter(Boolean).join(' · ');
      return;
    }
    this.meterLabel.textContent = meterLabel(m.tokens, m.windowTokens, fmtTokens, m.estimated, m.cached, this.cost);
  }

  private setMcpServers(servers: McpServerInfo[]): void {
    this.mcp.replaceChildren();
    for (const s of servers) this.setMcpServer(s.name, s.state, s.transport, s.reason ?? undefined, s.tools.length);
    this.mcp.hidden = servers.length === 0;
  }

  /** One chip per server: its name and state, the reason and tool count in the tooltip. */
  private setMcpServer(name: string, state: string, transport: string, reason?: string, tools?: number): void {
    let chip = Array.from(this.mcp.children).find((c) => (c as HTMLElement).dataset.server === name) as HTMLElement | undefined;
    if (!chip) {
      chip = h('span', { class: 'mcp-server', 'data-server': name });
      this.mcp.append(chip);
    }
    chip.dataset.state = state;
    chip.textContent = `${name}: ${state}`;
    chip.title = [`MCP server ${name} (${transport})`, tools !== undefined ? `${tools} tools` : '', reason ?? '']
      .filter(Boolean).join('\n');
    this.mcp.hidden = false;
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
  private submit(queue = false): void {
    const text = this.input.value.trim();
    if (!text) return;
    this.input.value = '';
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
