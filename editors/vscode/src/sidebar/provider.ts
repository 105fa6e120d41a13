// The sidebar webview view: holds the current session, turns webview actions into RPC calls, forwards the
// server's sessionUpdate notifications and routes requestApproval to inline approval cards (approvals.ts). Rewind
// and diff review are in rewindActions.ts, the model picker in modelPicker.ts (both reach the view through host.ts),
// reading a stored session back in stored.ts, what is shown around the chat in panels.ts.
import * as vscode from 'vscode';
import type { ServerManager } from '../serverManager';
import { DiffDocuments } from '../diffs';
import type { ApprovalDecision, SessionInfo, SessionUpdate } from '../rpc/protocol';
import type { ThreadlineClient } from '../rpc/client';
import { PendingApprovals } from './approvals';
import type { SidebarHost } from './host';
import { buildWebviewHtml, makeNonce } from './html';
import type { FromWebview, ServerState, ToWebview } from './messages';
import { ModelPicker } from './modelPicker';
import { RewindActions } from './rewindActions';
import { afterRestart, forgetUnattached } from './seqs';
import { readHistory, readStoredEvents } from './stored';
import { estimateMeter, sandboxMessage, showCommands, showMcpServers, showSandbox } from './panels';
import { storedDiffs } from '../webview/history';

const CURRENT_KEY = 'threadline.currentSession';

export class SidebarProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewId = 'threadline.sidebar';
  private view: vscode.WebviewView | undefined;
  private currentId: string | undefined;
  private running: string | undefined; // session id of the running turn
  private turnsInFlight = 0; // submitTurn requests not answered yet (the running turn and queued ones)
  private seqs = new Map<string, number>(); // last sessionUpdate seq seen per session: a re-attach resumes after it
  private attachedIds = new Set<string>(); // sessions followed with attachSession (daemon sessions started elsewhere)
  private readonly artifacts = new Map<string, Set<string>>(); // session -> artifact ids seen
  private readonly disposables: vscode.Disposable[] = [];
  private clientDisposables: vscode.Disposable[] = [];
  private readonly approvals: PendingApprovals;
  private readonly rewinds: RewindActions;
  private readonly models: ModelPicker;
  private readonly updateEmitter = new vscode.EventEmitter<SessionUpdate>();
  readonly onUpdate = this.updateEmitter.event;

  constructor(private readonly context: vscode.ExtensionContext, private readonly server: ServerManager,
    readonly diffs: DiffDocuments = new DiffDocuments()) {
    this.currentId = context.workspaceState.get<string>(CURRENT_KEY);
    this.approvals = new PendingApprovals({
      post: (msg) => this.post(msg),
      exists: () => this.view !== undefined,
      visible: () => this.view?.visible ?? false,
      reveal: () => this.reveal(),
    }, diffs);
    this.attach(server.client);
    this.disposables.push(server.onDidChangeClient((c) => this.attach(c)));
    server.isBusy = () => this.running !== undefined;
    const editor = server.editor;
    if (editor) this.disposables.push(editor.onDidChange(() => this.post({ type: 'chips', chips: editor.chips() })));
    const host: SidebarHost = {
      server,
      currentSession: () => this.currentId,
      post: (msg) => this.post(msg),
      selectSession: (id) => this.selectSession(id),
      listSessions: () => this.listSessions(),
      refreshSessions: () => this.refreshSessions(),
      estimateMeter: (id) => estimateMeter(this.server.client, this.postFn, id),
    };
    this.rewinds = new RewindActions(host, diffs);
    this.models = new ModelPicker(host);
  }

  get sessionId(): string | undefined {
    return this.currentId;
  }

  knownArtifacts(sessionId: string): string[] {
    return [...(this.artifacts.get(sessionId) ?? [])];
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.context.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.context.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = buildWebviewHtml({
      cspSource: view.webview.cspSource, nonce: makeNonce(), view: 'sidebar', title: 'Threadline',
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'webview.css')).toString(),
    });
    view.webview.onDidReceiveMessage((m: FromWebview) => void this.onMessage(m).catch((e) => this.showError(e)));
    view.onDidDispose(() => (this.view = undefined));
  }

  /** Reveal the sidebar and wait (briefly) until its webview exists. */
  async reveal(): Promise<boolean> {
    await vscode.commands.executeCommand(`${SidebarProvider.viewId}.focus`);
    for (let i = 0; i < 50 && !this.view; i++) await new Promise((r) => setTimeout(r, 100));
    return !!this.view;
  }

  // --- actions (from the webview or from commands) ----------------------------------------------------------

  /** Start a turn; with ``queue`` (a turn is running), run it right after the running one. */
  async submit(text: string, queue = false): Promise<void> {
    if (this.running && !queue) throw new Error('A turn is already running; steer it, queue this, or cancel it first.');
    const client = this.server.client;
    const sessionId = this.running ?? this.currentId ?? (await this.createSession(text.slice(0, 60)));
    this.running = sessionId;
    this.turnsInFlight++;
    this.post({ type: 'turn', running: true });
    try {
      const context = this.server.editor?.take(); // the chips: selections added, the active file (issue 34)
      const result = await client.request('submitTurn', { sessionId, text, ...(queue ? { queue: true } : {}), ...(context ? { context } : {}) });
      this.post({ type: 'turn', running: this.turnsInFlight > 1, result });
    } catch (err) {
      this.post({ type: 'turn', running: this.turnsInFlight > 1, error: (err as Error).message });
    } finally {
      if (--this.turnsInFlight === 0) this.running = undefined;
      void this.refreshSessions();
    }
  }

  /** Add to the running turn (read at its next model call); idle, it starts a turn instead. */
  async steer(text: string): Promise<void> {
    if (!this.running) return this.submit(text);
    await this.server.client.request('steerTurn', { sessionId: this.running, text });
  }

  /** Compact now, with an optional focus the summary keeps verbatim. */
  async compactNow(): Promise<void> {
    const sessionId = this.currentId;
    if (!sessionId) return;
    const focus = await vscode.window.showInputBox({
      title: 'Threadline: Compact Now', prompt: 'Optional focus the summary keeps verbatim (e.g. "keep the API decisions")',
      placeHolder: 'Leave empty for none', ignoreFocusOut: true,
    });
    if (focus === undefined) return;
    const r = await this.server.client.request('compactSession', { sessionId, ...(focus.trim() ? { focus: focus.trim() } : {}) });
    void vscode.window.showInformationMessage(r.compacted
      ? `Threadline compacted the context: ${r.beforeTokens} → ${r.afterTokens} tokens.`
      : 'Threadline: nothing to compact yet (all of it is in the recent tail).');
    await estimateMeter(this.server.client, this.postFn, sessionId);
  }

  /** The Rewind Files command's turn pick: rewindActions.ts. */
  rewindFiles(): Promise<void> {
    return this.rewinds.pickTurn();
  }

  /** A turn's menu (or an edit's button): rewindActions.ts. */
  rewindTurn(turnId: string, text?: string, toolCallId?: string): Promise<void> {
    return this.rewinds.rewindTurn(turnId, text, toolCallId);
  }

  /** An applied diff's title-bar "Rewind This Edit". */
  rewindFromDiff(toolCallId: string | undefined): Promise<void> {
    return this.rewinds.rewindFromDiff(toolCallId);
  }

  /** The diff editor's title-bar Allow/Reject: answer the approval of the call shown there. */
  answerFromDiff(toolCallId: string | undefined, decision: ApprovalDecision): void {
    this.approvals.answerToolCall(toolCallId, decision);
  }

  /** The model picker: modelPicker.ts. */
  pickModel(): Promise<void> {
    return this.models.pick();
  }

  async cancel(): Promise<void> {
    if (!this.running) return;
    await this.server.client.request('cancelTurn', { sessionId: this.running });
  }

  async newSession(): Promise<void> {
    await this.createSession();
    this.post({ type: 'focusInput' });
  }

  private async createSession(title?: string): Promise<string> {
    const cwd = this.server.workspaceFolder() ?? process.cwd();
    const model = this.models.forNextSession;
    const { sessionId, sandbox } = await this.server.client.request('createSession', {
      cwd, ...(title ? { title } : {}), ...(typeof model === 'string' ? { model } : {}) });
    this.models.taken();
    await this.setCurrent(sessionId);
    this.post(sandboxMessage(undefined, sandbox));
    this.post({ type: 'session', session: { sessionId, title: title ?? 'New session' }, history: [] });
    this.post({ type: 'meter', contextTokens: 0, contextWindowTokens: 0 });
    this.models.show(model);
    await this.refreshSessions();
    await showMcpServers(this.server.client, this.postFn, sessionId);
    await showCommands(this.server.client, this.postFn, sessionId);
    return sessionId;
  }

  async selectSession(sessionId: string): Promise<void> {
    await this.setCurrent(sessionId);
    const history = await readHistory(this.server.client, sessionId, (id) => this.noteArtifact(sessionId, id));
    const events = await readStoredEvents(this.server.client, sessionId);
    const turnOf = new Map(events.filter((e) => e.kind === 'fileDiff').map((e) => [String(e.payload.toolCallId), e.turnId]));
    for (const [id, diff] of storedDiffs(events)) this.diffs.remember(id, diff, sessionId, turnOf.get(id) ?? undefined); // "Show diff" on resumed cards
    this.post({ type: 'session', session: { sessionId, title: '' }, history, events });
    const sessions = await this.refreshSessions();
    this.models.show(sessions.find((s) => s.sessionId === sessionId)?.model);
    await showSandbox(this.server.client, this.postFn, sessionId);
    await estimateMeter(this.server.client, this.postFn, sessionId);
    await showMcpServers(this.server.client, this.postFn, sessionId);
    await showCommands(this.server.client, this.postFn, sessionId);
  }

  private async fork(atSeq?: number): Promise<void> {
    if (!this.currentId) return;
    const { sessionId } = await this.server.client.request('forkSession', { sessionId: this.currentId, ...(atSeq ? { atSeq } : {}) });
    await this.selectSession(sessionId);
    void vscode.window.showInformationMessage('Forked the session; you are now in the copy.');
  }

  private async deleteCurrent(): Promise<void> {
    const id = this.currentId;
    if (!id) return;
    const choice = await vscode.window.showWarningMessage('Delete this Threadline session and its artifacts?', { modal: true }, 'Delete');
    if (choice !== 'Delete') return;
    await this.server.client.request('deleteSession', { sessionId: id });
    await this.setCurrent(undefined);
    const sessions = await this.refreshSessions();
    if (sessions[0]) await this.selectSession(sessions[0].sessionId);
    else this.post({ type: 'session', session: { sessionId: '', title: '' }, history: [] });
  }

  // --- plumbing ----------------------------------------------------------------------------------------

  private async onMessage(m: FromWebview): Promise<void> {
    switch (m.type) {
      case 'ready': return this.onReady();
      case 'submit': return this.submit(m.text);
      case 'steer': return this.steer(m.text);
      case 'queue': return this.submit(m.text, true);
      case 'compact': return this.compactNow();
      case 'rewindTurn': return this.rewinds.rewindTurn(m.turnId, m.text);
      case 'rewindEdit': return this.rewinds.rewindTurn(m.turnId, undefined, m.toolCallId);
      case 'openDiff': return this.rewinds.openDiff(m.toolCallId);
      case 'cancel': return this.cancel();
      case 'newSession': return this.newSession();
      case 'selectSession': return this.selectSession(m.sessionId);
      case 'forkSession': return this.fork(m.atSeq);
      case 'deleteSession': return this.deleteCurrent();
      case 'approve': return this.approvals.answer(m.requestId, m.decision);
      case 'openArtifact':
        return void vscode.commands.executeCommand('threadline.openArtifact', this.currentId, m.artifactId);
      case 'showContextView': return void vscode.commands.executeCommand('threadline.showContextView');
      case 'pickModel': return this.models.pick();
      case 'removeChip': return this.server.editor?.remove(m.index);
      case 'complete': return void this.post({ type: 'completions', prefix: m.prefix, items: (await this.server.editor?.complete(m.prefix)) ?? [] });
    }
  }

  /** Follow a session the daemon runs (started by `threadline exec --detach`, another window, a terminal): its
   *  kept updates replay, then live ones stream as for a local turn; an approval that waited is asked again. With
   *  ``resume`` (a reconnect) the chat already shows everything up to the last seen seq and only the rest comes. */
  async attachTo(sessionId: string, resume = false): Promise<void> {
    if (!resume) {
      await this.setCurrent(sessionId);
      this.seqs.delete(sessionId);
      this.post({ type: 'session', session: { sessionId, title: '' }, history: [] });
    }
    const r = await this.server.client.request('attachSession', { sessionId, sinceSeq: this.seqs.get(sessionId) ?? 0 });
    this.attachedIds.add(sessionId);
    if (r.truncated) {
      // The daemon no longer keeps the start: the stored transcript, then the live updates after r.seq.
      await this.selectSession(sessionId);
      this.seqs.set(sessionId, r.seq);
    } else {
      await showSandbox(this.server.client, this.postFn, sessionId);
      await estimateMeter(this.server.client, this.postFn, sessionId);
    }
    if (r.running && !this.running) {
      this.running = sessionId;
      this.post({ type: 'turn', running: true });
    }
  }

  /** The daemon's sessions, running and waiting first, for "Attach to Running Session". */
  async daemonSessions(): Promise<SessionInfo[]> {
    const { sessions } = await this.server.client.request('listSessions', { limit: 100 });
    const live = (s: SessionInfo) => (s.waitingForApproval ? 2 : s.running ? 1 : 0);
    return [...sessions].sort((a, b) => live(b) - live(a));
  }

  private async onReady(): Promise<void> {
    this.post({ type: 'server', state: toServerState(this.server.client.state) });
    if (this.server.editor) this.post({ type: 'chips', chips: this.server.editor.chips() });
    await this.server.client.start();
    const sessions = await this.refreshSessions();
    if (this.currentId && !sessions.some((s) => s.sessionId === this.currentId)) await this.setCurrent(undefined);
    const reattach = this.currentId !== undefined && this.attachedIds.has(this.currentId);
    if (reattach) await this.attachTo(this.currentId!, true);
    else if (this.currentId) await this.selectSession(this.currentId);
    this.approvals.repost();
    if (this.running) this.post({ type: 'turn', running: true });
  }

  /** This workspace's sessions (the latest 100). */
  private async listSessions(): Promise<SessionInfo[]> {
    const cwd = this.server.workspaceFolder();
    const { sessions } = await this.server.client.request('listSessions', { ...(cwd ? { cwd } : {}), limit: 100 });
    return sessions;
  }

  private async refreshSessions(): Promise<SessionInfo[]> {
    const sessions = await this.listSessions();
    this.post({ type: 'sessions', sessions, currentId: this.currentId });
    return sessions;
  }

  private async setCurrent(id: string | undefined): Promise<void> {
    const left = this.currentId;
    if (left && left !== id && this.attachedIds.delete(left)) {
      // Switching away stops following it; its turn goes on in the daemon.
      void this.server.client.request('detachSession', { sessionId: left }).catch(() => undefined);
    }
    this.currentId = id;
    await this.context.workspaceState.update(CURRENT_KEY, id);
  }

  private attach(client: ThreadlineClient): void {
    forgetUnattached(this.seqs, this.attachedIds); // a new server numbers from 1
    this.clientDisposables.forEach((d) => d.dispose());
    this.clientDisposables = [
      client.onUpdate((params) => {
        const u = params.update;
        const seq = (params as { seq?: number | null }).seq;
        if (typeof seq === 'number') {
          const last = this.seqs.get(params.sessionId);
          if (last !== undefined && seq <= last) return; // already shown (a replay overlapping what came live)
          this.seqs.set(params.sessionId, seq);
        }
        if (u.kind === 'turnCompleted' && this.running === params.sessionId && this.turnsInFlight === 0) {
          this.running = undefined; // an attached turn this window did not submit
          this.post({ type: 'turn', running: false });
        }
        if (u.kind === 'artifactCreated') this.noteArtifact(params.sessionId, u.artifactId);
        if (u.kind === 'toolResult' && u.artifactId) this.noteArtifact(params.sessionId, u.artifactId);
        if (u.kind === 'toolResult' && u.diff) this.diffs.remember(u.toolCallId, u.diff, params.sessionId, params.turnId ?? undefined);
        if (u.kind === 'turnCompleted') this.approvals.withdraw(params.sessionId);
        this.post({ type: 'update', params });
        this.updateEmitter.fire(params);
      }),
      client.onStateChange((state) => {
        this.post({ type: 'server', state: toServerState(state) });
        if (state === 'crashed') this.approvals.withdrawAll();
      }),
      client.onRestart(() => {
        const again = afterRestart(this.seqs, this.attachedIds, this.currentId);
        void this.refreshSessions().catch(() => undefined);
        if (again) void this.attachTo(again, true).catch((err) => this.showError(err));
      }),
    ];
    client.setApprovalHandler((params, token) => this.approvals.ask(params, token));
  }

  private noteArtifact(sessionId: string, artifactId: string): void {
    if (!this.artifacts.has(sessionId)) this.artifacts.set(sessionId, new Set());
    this.artifacts.get(sessionId)!.add(artifactId);
  }

  private readonly postFn = (msg: ToWebview): void => this.post(msg);

  private post(msg: ToWebview): void {
    void this.view?.webview.postMessage(msg);
  }

  private showError(err: unknown): void {
    const message = (err as Error)?.message ?? String(err);
    this.post({ type: 'error', message });
    void vscode.window.showErrorMessage(`Threadline: ${message}`);
  }

  dispose(): void {
    this.clientDisposables.forEach((d) => d.dispose());
    this.disposables.forEach((d) => d.dispose());
    this.updateEmitter.dispose();
  }
}

function toServerState(state: string): ServerState {
  return state === 'running' ? 'running' : state === 'starting' ? 'starting' : state === 'crashed' ? 'crashed' : 'stopped';
}
