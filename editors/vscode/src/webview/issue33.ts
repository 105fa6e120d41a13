// Pure helpers for issue 33 in the sidebar (no DOM, so the plain-Node unit tests check them): the plan as a
// checklist, `/` completion from listCommands, and the context breakdown as the segments of a stacked bar.
import type { CommandInfo, ContextBreakdown, PlanEntry } from '../rpc/protocol';

export interface PlanItem { mark: string; step: string; status: PlanEntry['status'] }

const MARKS: Record<PlanEntry['status'], string> = { completed: '☑', in_progress: '◐', pending: '☐' };

/** The plan's steps in order, each with its checkbox mark. */
export function planItems(entries: PlanEntry[]): PlanItem[] {
  return entries.map((e) => ({ mark: MARKS[e.status] ?? '☐', step: e.step, status: e.status }));
}

/** "2 of 5 done" (and the step in progress, when there is one). */
export function planProgress(entries: PlanEntry[]): string {
  const done = entries.filter((e) => e.status === 'completed').length;
  const now = entries.find((e) => e.status === 'in_progress');
  return `${done} of ${entries.length} done${now ? ` · now: ${now.step}` : ''}`;
}

/** The commands to offer while the input is a `/` and the start of a name (nothing once a space follows). */
export function slashMatches(commands: CommandInfo[], text: string): CommandInfo[] {
  const m = /^\/([a-z0-9_:-]*)$/.exec(text);
  if (!m) return [];
  return commands.filter((c) => c.name.startsWith(m[1])).sort((a, b) => a.name.localeCompare(b.name));
}

/** What choosing a command puts in the input: `/name ` ready for its arguments. */
export function completeCommand(command: CommandInfo): string {
  return `/${command.name} `;
}

/** The label of a command in the completion list: `/name <hint> — description (source)`. */
export function commandLabel(command: CommandInfo): string {
  const hint = command.argumentHint ? ` ${command.argumentHint}` : '';
  return `/${command.name}${hint} — ${command.description} (${command.source})`;
}

/** The breakdown's token counts (``cleared`` lists the outputs the budget cleared, B-BUDGET-1: not a segment). */
export type TokenPart = Exclude<keyof ContextBreakdown, 'cleared'>;

export interface Segment { key: TokenPart; label: string; tokens: number; percent: number }

const PARTS: Array<[TokenPart, string]> = [
  ['systemPrompt', 'System prompt'], ['projectContext', 'Project context'], ['toolDefinitions', 'Tool definitions'],
  ['summary', 'Summary'], ['messages', 'Messages'], ['placeholders', 'Placeholders'], ['free', 'Free'],
];

/** The stacked bar's segments in request order, each with its share of the window (percent, summing to 100 when
 *  the request fits the window: the server's breakdown sums to the window then). */
export function breakdownSegments(b: ContextBreakdown): Segment[] {
  const total = PARTS.reduce((sum, [key]) => sum + (b[key] ?? 0), 0);
  return PARTS.map(([key, label]) => ({ key, label, tokens: b[key] ?? 0, percent: total ? ((b[key] ?? 0) * 100) / total : 0 }));
}
