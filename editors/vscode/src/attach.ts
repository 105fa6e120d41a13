// Sessions the daemon runs (docs/DAEMON.md), without vscode: the command that reaches the daemon, the "Attach to
// Running Session" pick, and which session this window is attached to with the last update `seq` it showed.
import type { AttachSessionResult, SessionInfo } from './rpc/protocol';

/** The server command with `useDaemon`: a command ending in `serve` runs `connect` (the stdio <-> daemon bridge). */
export function daemonCommand(serverCommand: string, useDaemon: boolean): string {
  const command = serverCommand.trim() || 'threadline serve';
  return useDaemon ? command.replace(/(^|\s)serve$/, '$1connect') : command;
}

export interface AttachPickItem {
  label: string;
  description: string;
  detail: string;
  sessionId: string;
  cwd: string;
}

/** listSessions items for the quick pick: running and waiting ones first, each with its state and attached clients. */
export function attachPickItems(sessions: SessionInfo[]): AttachPickItem[] {
  const busy = (s: SessionInfo) => (s.running || s.waitingForApproval ? 1 : 0);
  return sessions
    .map((s, i) => ({ s, i }))
    .sort((a, b) => busy(b.s) - busy(a.s) || a.i - b.i)
    .map(({ s }) => {
      const state = s.waitingForApproval ? 'waiting for approval' : s.running ? 'running' : 'idle';
      const attached = s.attachedClients ?? 0;
      return {
        label: s.title || s.sessionId,
        description: s.cwd,
        detail: attached > 0 ? `${state} · ${attached} attached` : state,
        sessionId: s.sessionId,
        cwd: s.cwd,
      };
    });
}

interface AttachRequests {
  request(method: 'attachSession', params: { sessionId: string; sinceSeq?: number }): Promise<AttachSessionResult>;
  request(method: 'detachSession', params: { sessionId: string }): Promise<unknown>;
}

/** The session this window attached to, and the last `seq` shown per session (an update at or below it is not new). */
export class Attachments {
  attached: string | undefined;
  private readonly lastSeq = new Map<string, number>();

  constructor(private readonly client: () => AttachRequests) {}

  /** Whether an update is new to this window; remembers its seq. */
  fresh(params: { sessionId: string; seq?: number | null }): boolean {
    if (typeof params.seq !== 'number') return true;
    const last = this.lastSeq.get(params.sessionId);
    if (last !== undefined && params.seq <= last) return false;
    this.lastSeq.set(params.sessionId, params.seq);
    return true;
  }

  /** Attach to a session (detaching the one attached before). `fromStart`: the view is empty, so every kept update
   * is replayed; else only those after the last one shown. The replayed updates arrive before this resolves. */
  async attach(sessionId: string, fromStart: boolean): Promise<AttachSessionResult> {
    await this.detachUnless(sessionId);
    if (fromStart) this.lastSeq.delete(sessionId);
    this.attached = sessionId;
    try {
      return await this.client().request('attachSession', { sessionId, sinceSeq: this.lastSeq.get(sessionId) ?? 0 });
    } catch (err) {
      this.attached = undefined;
      throw err;
    }
  }

  /** Detach from the attached session unless it is `sessionId` (switching to another session). */
  async detachUnless(sessionId?: string): Promise<void> {
    const id = this.attached;
    if (!id || id === sessionId) return;
    this.attached = undefined;
    await this.client().request('detachSession', { sessionId: id }).catch(() => undefined);
  }

  /** A new server (restart): its numbers start again and it has no attachments. */
  reset(): void {
    this.attached = undefined;
    this.lastSeq.clear();
  }
}
