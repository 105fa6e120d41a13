// The context-view panel: what the next model request would contain (getContextView), message by message.
import type { FromWebview, ToWebview } from '../sidebar/messages';
import type { CompactionRecord, ContextBreakdown, ContextViewResult } from '../rpc/protocol';
import { WIRE_TEXT } from '../rpc/protocol.generated';
import { clip, fmtTokens, h } from './dom';
import { breakdownSegments } from './issue33';

export class ContextView {
  constructor(private readonly root: HTMLElement, private readonly post: (m: FromWebview) => void) {
    root.append(h('div', { class: 'empty', text: 'Loading the context view…' }));
  }

  handle(msg: ToWebview): void {
    if (msg.type === 'contextView') this.render(msg.view, msg.sessionTitle);
    else if (msg.type === 'error') this.root.replaceChildren(h('div', { class: 'notice error', role: 'alert', text: msg.message }));
  }

  private render(v: ContextViewResult, title?: string): void {
    const pct = v.contextWindowTokens ? Math.min(100, (v.estimatedTokens / v.contextWindowTokens) * 100) : 0;
    const thresholdPct = v.contextWindowTokens ? Math.min(100, (v.thresholdTokens / v.contextWindowTokens) * 100) : 0;
    const refresh = h('button', { id: 'refresh', text: 'Refresh' });
    refresh.addEventListener('click', () => this.post({ type: 'refreshContextView' }));
    const fill = h('div', { class: 'meter-fill' });
    fill.style.width = `${pct}%`;
    const mark = h('div', { class: 'meter-threshold', title: `Compaction threshold ${fmtTokens(v.thresholdTokens)}` });
    mark.style.left = `${thresholdPct}%`;
    const rows = v.messages.map((m, i) => this.row(i, m, v.summary ?? undefined));
    this.root.replaceChildren(
      h('header', { class: 'cv-header' },
        h('h1', { text: `Context view${title ? ` · ${title}` : ''}` }),
        h('span', { id: 'cv-mode', class: `mode-badge ${v.mode}`, text: v.mode }), refresh),
      h('div', { class: 'meter', role: 'meter', 'aria-valuenow': Math.round(pct), 'aria-valuemin': 0, 'aria-valuemax': 100 },
        h('div', { class: 'meter-track' }, fill, mark),
        h('span', { id: 'cv-tokens', class: 'meter-label',
          text: `Next request ≈${fmtTokens(v.estimatedTokens)} tokens · threshold ${fmtTokens(v.thresholdTokens)} · window ${fmtTokens(v.contextWindowTokens)}` })),
      v.breakdown ? breakdownBar(v.breakdown) : '',
      v.compactions?.length ? compactionTable(v.compactions) : '',
      h('p', { class: 'cv-facts', text: `${v.messages.length} messages sent, built from ${v.transcriptMessages} stored · ${v.compactedToolOutputs} tool outputs as placeholders · keep-recent ${fmtTokens(v.keepRecentTokens)} tokens` }),
      v.summary ? h('details', { class: 'notice compaction', open: true }, h('summary', { text: 'Summary of earlier conversation' }), h('pre', { text: v.summary })) : '',
      h('table', { class: 'cv-table' },
        h('thead', {}, h('tr', {}, h('th', { text: '#' }), h('th', { text: 'Role' }), h('th', { text: 'Size' }), h('th', { text: 'Content' }))),
        h('tbody', {}, ...rows)),
    );
  }

  private row(i: number, m: Record<string, unknown>, summary?: string): HTMLElement {
    const role = String(m.role ?? '?');
    const text = contentText(m.content);
    const calls = Array.isArray(m.tool_calls) ? (m.tool_calls as Array<{ function?: { name?: string; arguments?: string } }>) : [];
    const callText = calls.map((c) => `${c.function?.name}(${c.function?.arguments ?? ''})`).join('\n');
    const chars = text.length + callText.length;
    const tags: string[] = [];
    if (role === 'tool' && text.startsWith(WIRE_TEXT.placeholderPrefix)) tags.push('placeholder');
    if (role === 'system' && summary && text.includes(summary.slice(0, 200))) tags.push('summary');
    if (calls.length) tags.push(`${calls.length} tool call${calls.length > 1 ? 's' : ''}`);
    const preview = (text || callText).replace(/\s+/g, ' ').slice(0, 140);
    return h('tr', { class: `cv-row ${tags.includes('placeholder') ? 'placeholder' : ''} ${tags.includes('summary') ? 'summary' : ''}`, 'data-role': role },
      h('td', { text: String(i + 1) }),
      h('td', {}, h('span', { class: `role ${role}`, text: role }), ...tags.map((t) => h('span', { class: `tag ${t.split(' ')[1] ? 'calls' : t}`, text: t }))),
      h('td', { class: 'num', text: `${fmtTokens(chars)} ch ≈${fmtTokens(Math.ceil(chars / 4))} tok` }),
      h('td', {}, h('details', {}, h('summary', { text: preview || '(empty)' }), h('pre', { text: clip([text, callText].filter(Boolean).join('\n'), 20000) }))));
  }
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '[image]')).join('\n');
  return '';
}

/** What fills the window, as one stacked bar with a legend (issue 33): each part's tokens and share. */
function breakdownBar(b: ContextBreakdown): HTMLElement {
  const segments = breakdownSegments(b);
  const bar = h('div', { id: 'cv-breakdown', class: 'breakdown-bar', role: 'img',
    'aria-label': segments.map((s) => `${s.label} ${fmtTokens(s.tokens)}`).join(', ') });
  for (const s of segments) {
    if (s.tokens <= 0) continue;
    const seg = h('div', { class: `segment ${s.key}`, 'data-part': s.key, title: `${s.label}: ${fmtTokens(s.tokens)} tokens (${s.percent.toFixed(1)}%)` });
    seg.style.width = `${s.percent}%`;
    bar.append(seg);
  }
  const legend = h('ul', { class: 'breakdown-legend' }, ...segments.map((s) =>
    h('li', { 'data-part': s.key }, h('span', { class: `swatch ${s.key}` }), `${s.label} ${fmtTokens(s.tokens)} (${s.percent.toFixed(1)}%)`)));
  return h('section', { class: 'breakdown' }, h('h2', { text: 'What fills the context' }), bar, legend);
}

/** "2026-12-07 23:18:44" from an ISO timestamp: one line in the When column (the whole one is its tooltip). */
export function shortTime(iso: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(iso);
  return m ? `${m[1]} ${m[2]}` : iso;
}

/** The session's compactions, oldest first: when, why, how much, and the focus kept. */
function compactionTable(compactions: CompactionRecord[]): HTMLElement {
  return h('details', { id: 'cv-compactions', class: 'compactions', open: true },
    h('summary', { text: `${compactions.length} compaction${compactions.length === 1 ? '' : 's'}` }),
    h('table', { class: 'cv-table' },
      h('thead', {}, h('tr', {}, ...['When', 'Trigger', 'Mode', 'Before → after', 'Focus'].map((t) => h('th', { text: t })))),
      h('tbody', {}, ...compactions.map((c) => h('tr', { 'data-event': c.eventId },
        h('td', { text: shortTime(c.at), title: c.at }), h('td', { text: c.trigger }), h('td', { text: c.mode }),
        h('td', { class: 'num', text: `${fmtTokens(c.beforeTokens)} → ${fmtTokens(c.afterTokens)}` }),
        h('td', { text: c.focus ?? '' }))))));
}
