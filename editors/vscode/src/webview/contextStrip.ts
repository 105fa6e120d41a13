// The strip above the conversation: the context meter (the last request against the window, its cached share and
// the session's cost, B-METER-1 / B-CACHE-5), the model control, and the session's MCP servers with their state.
import type { FromWebview } from '../sidebar/messages';
import type { McpServerInfo } from '../rpc/protocol';
import { fmtTokens, h } from './dom';
import { meterLabel } from './meter';

export class ContextStrip {
  private cost: string | undefined; // the session's cost so far ("$0.0123"), shown next to the meter when known
  private meterState: { tokens: number; windowTokens: number; estimated: boolean; cached?: string } | undefined;
  private budget: string | undefined; // B-BUDGET-1: "budget auto" / "budget 60k", kept until the server says another
  private compacting: number | undefined; // contextCompacting's beforeTokens, until the compaction is done
  private readonly meterFill = h('div', { class: 'meter-fill' });
  private readonly meterLabel = h('span', { class: 'meter-label', text: 'Context: no request yet' });
  private readonly meter = h('div', {
    id: 'meter', class: 'meter', role: 'meter', 'aria-label': 'Context window use', 'aria-valuemin': 0, 'aria-valuemax': 100,
    'aria-valuenow': 0, tabindex: 0,
  }, h('div', { class: 'meter-track' }, this.meterFill), this.meterLabel);
  private readonly modelBtn = h('button', {
    id: 'model-picker', class: 'model-picker', title: 'Pick the model for this session (listModels)', text: 'Model: default',
  });
  private readonly sandbox = h('span', { id: 'sandbox-state', class: 'sandbox-state', text: '' });
  private readonly mcp = h('div', { id: 'mcp-servers', class: 'mcp-servers', 'aria-label': 'MCP servers', hidden: true });
  /** The meter row (meter and model control), then the MCP strip: what the chat puts under its toolbar. */
  readonly elements: HTMLElement[] = [h('div', { class: 'meter-row' }, this.meter, this.modelBtn, this.sandbox), this.mcp];

  constructor(post: (msg: FromWebview) => void) {
    this.modelBtn.addEventListener('click', () => post({ type: 'pickModel' }));
  }

  setModel(label: string): void {
    this.modelBtn.textContent = label;
  }

  /** The approval policy and the sandbox state (B-SBX-2: a sandbox that is not enforced is a warning). */
  setSandbox(text: string, title: string, warn: boolean): void {
    this.sandbox.textContent = text;
    this.sandbox.title = title;
    this.sandbox.classList.toggle('warn', warn);
  }

  /** The session's cost; `keep` leaves the one shown when none is given (a usage update without a price). */
  setCost(cost: string | undefined, keep = false): void {
    this.cost = cost ?? (keep ? this.cost : undefined);
    this.refreshLabel();
  }

  /** `cached` (B-CACHE-5) is the last request's cached share, shown only for a request the provider answered. */
  setMeter(tokens: number, windowTokens: number, estimated = false, cached?: string, budget?: string): void {
    if (budget) this.budget = budget;
    const pct = windowTokens > 0 ? Math.min(100, (tokens / windowTokens) * 100) : 0;
    this.compacting = undefined; // a new figure (the compaction's, or a request's) ends the "compacting" state
    this.meterState = { tokens, windowTokens, estimated, cached };
    this.meter.dataset.tokens = String(tokens);
    if (cached) this.meter.dataset.cached = cached;
    else delete this.meter.dataset.cached;
    this.meter.dataset.window = String(windowTokens);
    this.meter.setAttribute('aria-valuenow', String(Math.round(pct)));
    this.meterFill.style.width = `${pct}%`;
    this.meter.classList.toggle('warn', pct >= 70 && pct < 90);
    this.meter.classList.toggle('full', pct >= 90);
    this.refreshLabel();
  }

  /** A compaction: the meter drops to the new view's estimate, visibly. */
  dropTo(tokens: number): void {
    const windowTokens = Number(this.meter.dataset.window || 0);
    if (windowTokens) this.setMeter(tokens, windowTokens, true);
    this.meter.classList.remove('dropped');
    void this.meter.offsetWidth; // restart the animation
    this.meter.classList.add('dropped');
  }

  /** contextCompacting: the server is compacting a request of `beforeTokens`; `undefined` when it no longer is
   *  (the contextCompacted that follows drops the meter, which ends it too). */
  setCompacting(beforeTokens: number | undefined): void {
    this.compacting = beforeTokens;
    this.refreshLabel();
  }

  private refreshLabel(): void {
    if (this.cost) this.meter.dataset.cost = this.cost;
    else delete this.meter.dataset.cost;
    this.meter.classList.toggle('compacting', this.compacting !== undefined);
    if (this.compacting !== undefined) {
      this.meterLabel.textContent = `Compacting the context (${fmtTokens(this.compacting)} tokens)…`;
      return;
    }
    const m = this.meterState;
    if (!m) {
      this.meterLabel.textContent = ['Context: no request yet', this.cost].filter(Boolean).join(' · ');
      return;
    }
    this.meterLabel.textContent = meterLabel(m.tokens, m.windowTokens, fmtTokens, m.estimated, m.cached, this.cost, this.budget);
  }

  setMcpServers(servers: McpServerInfo[]): void {
    this.mcp.replaceChildren();
    for (const s of servers) this.setMcpServer(s.name, s.state, s.transport, s.reason ?? undefined, s.tools.length);
    this.mcp.hidden = servers.length === 0;
  }

  /** One chip per server: its name and state, the reason and tool count in the tooltip. */
  setMcpServer(name: string, state: string, transport: string, reason?: string, tools?: number): void {
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
}
