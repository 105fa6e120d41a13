// What the sidebar shows around a session's chat, each read from the server and posted to the webview: the slash
// commands (for the composer's `/` completion), the approval policy and sandbox badge, the MCP servers and the
// context meter's estimate. A server without one of them gets an empty one, never an error.
import * as vscode from 'vscode';
import type { ThreadlineClient } from '../rpc/client';
import { sandboxBadge } from '../sandbox';
import type { ToWebview } from './messages';

type Post = (msg: ToWebview) => void;

export async function showCommands(client: ThreadlineClient, post: Post, sessionId: string): Promise<void> {
  try {
    const { commands } = await client.request('listCommands', { sessionId });
    post({ type: 'commands', commands });
  } catch {
    post({ type: 'commands', commands: [] }); // a server without slash commands
  }
}

/** The approval policy and sandbox state beside the model control (updateSession with no change reads them). */
export async function showSandbox(client: ThreadlineClient, post: Post, sessionId: string): Promise<void> {
  try {
    const now = await client.request('updateSession', { sessionId });
    post(sandboxMessage(now.approvalPolicy, now.sandbox));
  } catch {
    post(sandboxMessage(undefined, undefined));
  }
}

/** The badge's message for a policy (none: the configured one) and a session's sandbox state. */
export function sandboxMessage(policy: string | null | undefined, sandbox: Parameters<typeof sandboxBadge>[1]): ToWebview {
  return { type: 'sandbox', ...sandboxBadge(policy ?? configuredPolicy(), sandbox) };
}

function configuredPolicy(): string {
  return vscode.workspace.getConfiguration('threadline').get<string>('approvalPolicy') ?? 'ask';
}

/** The session's MCP servers and their state (listing them starts them); later changes come as updates. */
export async function showMcpServers(client: ThreadlineClient, post: Post, sessionId: string): Promise<void> {
  try {
    const { servers } = await client.request('listMcpServers', { sessionId });
    post({ type: 'mcpServers', servers });
  } catch {
    post({ type: 'mcpServers', servers: [] }); // a server without MCP support
  }
}

/** The meter before the next request: getContextView's estimate (in the provider's tokens, B-TOK-4). */
export async function estimateMeter(client: ThreadlineClient, post: Post, sessionId: string): Promise<void> {
  try {
    const cfgWindow = vscode.workspace.getConfiguration('threadline').get<number>('contextWindowTokens') ?? 0;
    const v = await client.request('getContextView', { sessionId, ...(cfgWindow > 0 ? { contextWindowTokens: cfgWindow } : {}) });
    const budget = v.budget ? (v.budget.source === 'auto' ? 'budget auto' : `budget ${Math.round(v.budget.tokens / 1000)}k`) : undefined;
    post({ type: 'meter', contextTokens: v.estimatedTokens, contextWindowTokens: v.contextWindowTokens, estimated: true, budget });
  } catch {
    /* the meter fills on the next request */
  }
}
