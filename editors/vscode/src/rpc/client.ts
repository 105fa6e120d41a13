// The Threadline JSON-RPC client: spawns `threadline serve` over stdio, runs the LSP lifecycle, exposes typed
// methods, server notifications and the approval request, and restarts the server when it dies.
// It must not import `vscode`: the unit tests run it under plain Node against the real server.
import { ChildProcess, spawn } from 'node:child_process';
import {
  CancellationToken,
  Emitter,
  Event,
  MessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
} from 'vscode-jsonrpc/node';
import { splitCommandLine } from './command';
import type {
  ApprovalDecision,
  InitializationOptions,
  MethodName,
  ParamsOf,
  RequestApprovalParams,
  ResultOf,
  SessionUpdate,
} from './protocol';
import type * as G from './protocol.generated';

export type ClientState = 'stopped' | 'starting' | 'running' | 'crashed';

export interface ClientOptions {
  /** Command line that starts the server on stdio, e.g. `threadline serve`. */
  command: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Evaluated on every (re)start, so a key or setting changed since the last start applies. */
  initializationOptions?: () => InitializationOptions | Promise<InitializationOptions>;
  /** Receives the server's stderr (its log) line by line, and the client's own events. */
  log?: (line: string) => void;
  autoRestart?: boolean;
  /** At most this many automatic restarts within `restartWindowMs`; then the client stays crashed. */
  maxRestarts?: number;
  restartWindowMs?: number;
  restartDelayMs?: number;
  /** Editor grounding (issue 34): what the editor answers, advertised at initialize, and the answerer of the
   * server's editor/* requests. Absent: nothing is advertised and the server asks nothing. */
  editor?: EditorAnswerer;
}

/** The editor/* server requests: method -> [params, result]. */
export type EditorRequests = Pick<G.GeneratedServerRequests, 'editor/diagnostics' | 'editor/definition' | 'editor/references' | 'editor/workspaceSymbols'>;
export type EditorMethod = keyof EditorRequests;
export const EDITOR_METHODS: EditorMethod[] = ['editor/diagnostics', 'editor/definition', 'editor/references', 'editor/workspaceSymbols'];

export interface EditorAnswerer {
  capabilities: () => G.EditorCapabilities | undefined;
  answer<M extends EditorMethod>(method: M, params: EditorRequests[M][0], token: CancellationToken): Promise<EditorRequests[M][1]>;
}

export interface CrashInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines of the server's stderr, to show the person why it died. */
  stderrTail: string;
  willRestart: boolean;
}

export type ApprovalHandler = (params: RequestApprovalParams, token: CancellationToken) => Promise<ApprovalDecision>;

export class RpcError extends Error {
  constructor(message: string, readonly code: number, readonly dataCode?: string) {
    super(message);
  }
}

export class ThreadlineClient {
  private proc: ChildProcess | undefined;
  private conn: MessageConnection | undefined;
  private ready: Promise<void> | undefined;
  private stopping = false;
  private restarts: number[] = [];
  private stderrTail: string[] = [];
  private approvalHandler: ApprovalHandler | undefined;
  private _state: ClientState = 'stopped';
  private _capabilities: unknown;

  private readonly updateEmitter = new Emitter<SessionUpdate>();
  private readonly stateEmitter = new Emitter<ClientState>();
  private readonly crashEmitter = new Emitter<CrashInfo>();
  private readonly restartEmitter = new Emitter<void>();
  readonly onUpdate: Event<SessionUpdate> = this.updateEmitter.event;
  readonly onStateChange: Event<ClientState> = this.stateEmitter.event;
  readonly onCrash: Event<CrashInfo> = this.crashEmitter.event;
  /** Fired after an automatic restart has initialized the new server. */
  readonly onRestart: Event<void> = this.restartEmitter.event;

  constructor(private readonly options: ClientOptions) {}

  get state(): ClientState {
    return this._state;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** `capabilities.experimental.threadline` of the initialize result. */
  get serverInfo(): unknown {
    return this._capabilities;
  }

  /** Answer the server's `requestApproval`. Without a handler every request is rejected. */
  setApprovalHandler(handler: ApprovalHandler | undefined): void {
    this.approvalHandler = handler;
  }

  /** Spawn and initialize the server; resolves when requests may be sent. */
  start(): Promise<void> {
    if (!this.ready) {
      this.stopping = false;
      this.ready = this.launch();
      this.ready.catch(() => (this.ready = undefined));
    }
    return this.ready;
  }

  async request<M extends MethodName>(method: M, params: ParamsOf<M>, token?: CancellationToken): Promise<ResultOf<M>> {
    await this.start();
    const conn = this.conn;
    if (!conn) throw new RpcError('the Threadline server is not running', -32099, 'NotRunning');
    try {
      // A trailing `undefined` would be sent as a second positional param: pass the token only when given.
      return (await (token ? conn.sendRequest(method, params, token) : conn.sendRequest(method, params))) as ResultOf<M>;
    } catch (err) {
      throw toRpcError(err);
    }
  }

  /** Graceful shutdown (`shutdown` + `exit`), then SIGTERM/SIGKILL if the process lingers. */
  async stop(): Promise<void> {
    this.stopping = true;
    const proc = this.proc;
    const conn = this.conn;
    this.ready = undefined;
    if (!proc) return this.setState('stopped');
    const exited = new Promise<void>((resolve) => (proc.exitCode !== null || proc.signalCode ? resolve() : proc.once('exit', () => resolve())));
    try {
      if (conn) {
        await withTimeout(conn.sendRequest('shutdown'), 2000);
        conn.sendNotification('exit');
      }
    } catch {
      /* the server may already be gone */
    }
    if (!(await withTimeout(exited, 2000).then(() => true, () => false))) {
      proc.kill('SIGTERM');
      if (!(await withTimeout(exited, 2000).then(() => true, () => false))) proc.kill('SIGKILL');
    }
    this.setState('stopped');
  }

  async restart(): Promise<void> {
    await this.stop();
    this.restarts = [];
    await this.start();
  }

  dispose(): void {
    void this.stop();
    this.updateEmitter.dispose();
    this.stateEmitter.dispose();
    this.crashEmitter.dispose();
    this.restartEmitter.dispose();
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private setState(state: ClientState): void {
    if (state !== this._state) {
      this._state = state;
      this.stateEmitter.fire(state);
    }
  }

  private async launch(): Promise<void> {
    this.setState('starting');
    const [file, ...args] = splitCommandLine(this.options.command);
    if (!file) throw new RpcError('threadline.serverCommand is empty', -32099, 'NoCommand');
    this.log(`[client] starting: ${this.options.command} (cwd ${this.options.cwd ?? process.cwd()})`);
    const proc = spawn(file, args, { cwd: this.options.cwd, env: this.options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc = proc;
    this.stderrTail = [];
    const spawned = new Promise<void>((resolve, reject) => {
      proc.once('spawn', resolve);
      proc.once('error', reject);
    });
    let partial = '';
    proc.stderr!.setEncoding('utf8');
    proc.stderr!.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) this.onStderrLine(line);
    });
    try {
      await spawned;
    } catch (err) {
      this.proc = undefined;
      this.setState('crashed');
      const msg = `cannot start the Threadline server with \`${this.options.command}\`: ${(err as Error).message}`;
      this.log(`[client] ${msg}`);
      throw new RpcError(msg, -32099, 'SpawnFailed');
    }
    const conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
    this.conn = conn;
    proc.once('exit', (code, signal) => {
      if (partial) this.onStderrLine(partial);
      this.onExit(proc, conn, code, signal);
    });
    conn.onNotification('sessionUpdate', (params: SessionUpdate) => this.updateEmitter.fire(params));
    conn.onNotification('window/logMessage', (p: { message?: string }) => this.log(`[server] ${p?.message ?? ''}`));
    conn.onNotification('window/showMessage', (p: { message?: string }) => this.log(`[server] ${p?.message ?? ''}`));
    conn.onUnhandledNotification((n) => this.log(`[client] unhandled notification ${n.method}`));
    conn.onRequest('requestApproval', async (params: RequestApprovalParams, token: CancellationToken) => {
      const handler = this.approvalHandler;
      const decision: ApprovalDecision = handler ? await handler(params, token) : 'reject';
      this.log(`[client] approval ${params.tool} (${params.toolCallId}): ${decision}`);
      return { decision };
    });
    for (const method of EDITOR_METHODS) {
      conn.onRequest(method, async (params: any, token: CancellationToken) => {
        const editor = this.options.editor;
        if (!editor) throw new ResponseError(-32601, `${method} is not answered by this client`);
        try {
          return await editor.answer(method, params, token);
        } catch (err) {
          throw new ResponseError(-32603, (err as Error).message); // the model reads it as a clear tool failure
        }
      });
    }
    conn.onError(([err]) => this.log(`[client] connection error: ${err.message}`));
    conn.listen();
    try {
      const initializationOptions = (await this.options.initializationOptions?.()) ?? {};
      const result = (await conn.sendRequest('initialize', {
        processId: process.pid,
        clientInfo: { name: 'threadline-vscode' },
        rootUri: null,
        capabilities: ((caps) => (caps ? { experimental: { threadline: { editor: caps } } } : {}))(this.options.editor?.capabilities()),
        initializationOptions,
      })) as { capabilities?: { experimental?: { threadline?: unknown } } };
      this._capabilities = result?.capabilities?.experimental?.threadline;
      await conn.sendNotification('initialized', {});
    } catch (err) {
      this.log(`[client] initialize failed: ${(err as Error).message}`);
      proc.kill('SIGTERM');
      throw toRpcError(err);
    }
    this.log(`[client] server ready (pid ${proc.pid})`);
    this.setState('running');
  }

  private onStderrLine(line: string): void {
    this.stderrTail.push(line);
    if (this.stderrTail.length > 20) this.stderrTail.shift();
    this.log(line);
  }

  private onExit(proc: ChildProcess, conn: MessageConnection, code: number | null, signal: NodeJS.Signals | null): void {
    conn.dispose(); // rejects every pending request
    if (this.proc !== proc) return;
    this.proc = undefined;
    this.conn = undefined;
    this.ready = undefined;
    if (this.stopping) {
      this.log(`[client] server stopped (code ${code}, signal ${signal})`);
      return this.setState('stopped');
    }
    const now = Date.now();
    const windowMs = this.options.restartWindowMs ?? 180_000;
    this.restarts = this.restarts.filter((t) => now - t < windowMs);
    const willRestart = (this.options.autoRestart ?? true) && this.restarts.length < (this.options.maxRestarts ?? 5);
    this.log(`[client] server exited unexpectedly (code ${code}, signal ${signal})${willRestart ? '; restarting' : ''}`);
    this.setState('crashed');
    this.crashEmitter.fire({ code, signal, stderrTail: this.stderrTail.join('\n'), willRestart });
    if (!willRestart) return;
    this.restarts.push(now);
    const delay = (this.options.restartDelayMs ?? 300) * this.restarts.length;
    setTimeout(() => {
      if (this.stopping || this.ready) return;
      this.start().then(
        () => this.restartEmitter.fire(),
        (err) => this.log(`[client] restart failed: ${(err as Error).message}`),
      );
    }, delay);
  }
}

function toRpcError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof ResponseError) {
    const data = err.data as { code?: string } | undefined;
    return new RpcError(err.message, err.code, data?.code);
  }
  return new RpcError((err as Error)?.message ?? String(err), -32099, 'ConnectionClosed');
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then((v) => (clearTimeout(t), resolve(v)), (e) => (clearTimeout(t), reject(e)));
  });
}
