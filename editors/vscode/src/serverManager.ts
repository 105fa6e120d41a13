// Owns the ThreadlineClient inside VS Code: builds its options from settings and SecretStorage, shows the
// server's log in an output channel, and tells the person when the server dies and restarts.
import * as vscode from 'vscode';
import type { EditorBridge } from './editor';
import { ThreadlineClient } from './rpc/client';
import { serverCommand } from './rpc/command';
import type { ApprovalPolicy, InitializationOptions } from './rpc/protocol';

export const API_KEY_SECRET = 'threadline.apiKey';

export class ServerManager implements vscode.Disposable {
  client: ThreadlineClient;
  private readonly disposables: vscode.Disposable[] = [];
  private clientDisposables: vscode.Disposable[] = [];
  private readonly changed = new vscode.EventEmitter<ThreadlineClient>();
  /** Fired when a new client replaces the old one (settings or key changed). */
  readonly onDidChangeClient = this.changed.event;
  isBusy: () => boolean = () => false;

  constructor(private readonly context: vscode.ExtensionContext, readonly output: vscode.OutputChannel, readonly editor?: EditorBridge) {
    this.client = this.createClient();
    this.disposables.push(vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('threadline')) void this.settingsChanged();
    }));
  }

  workspaceFolder(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  async restart(): Promise<void> {
    const old = this.client;
    this.clientDisposables.forEach((d) => d.dispose());
    await old.stop();
    old.dispose();
    this.client = this.createClient();
    this.changed.fire(this.client);
    await this.client.start();
  }

  async setApiKey(key: string | undefined): Promise<void> {
    if (key) await this.context.secrets.store(API_KEY_SECRET, key);
    else await this.context.secrets.delete(API_KEY_SECRET);
    await this.restart();
  }

  private async settingsChanged(): Promise<void> {
    if (!this.isBusy()) return this.restart();
    const choice = await vscode.window.showInformationMessage(
      'Threadline settings changed. They apply when the server restarts, which stops the running turn.', 'Restart Now');
    if (choice) await this.restart();
  }

  private createClient(): ThreadlineClient {
    const cfg = vscode.workspace.getConfiguration('threadline');
    const client = new ThreadlineClient({
      command: serverCommand(cfg.get<string>('serverCommand') || 'threadline serve', cfg.get<boolean>('useDaemon') ?? false),
      cwd: this.workspaceFolder(),
      env: process.env,
      log: (line) => this.output.appendLine(line),
      initializationOptions: () => this.initializationOptions(),
      editor: this.editor, // editor/* answered from VS Code's language features (issue 34)
    });
    this.clientDisposables = [
      client.onCrash((info) => {
        const why = `${info.code !== null ? `exit code ${info.code}` : `signal ${info.signal}`}`;
        const last = info.stderrTail.split('\n').filter(Boolean).pop();
        const message = `The Threadline server stopped (${why})${last ? `: ${last}` : ''}.${info.willRestart ? ' Restarting it…' : ''}`;
        const show = info.willRestart ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
        void show(message, 'Show Log', ...(info.willRestart ? [] : ['Restart'])).then((choice) => {
          if (choice === 'Show Log') this.output.show(true);
          if (choice === 'Restart') void this.restart();
        });
      }),
      client.onRestart(() => void vscode.window.showInformationMessage('The Threadline server was restarted.')),
    ];
    return client;
  }

  private async initializationOptions(): Promise<InitializationOptions> {
    const cfg = vscode.workspace.getConfiguration('threadline');
    const provider: NonNullable<InitializationOptions['provider']> = {};
    const baseUrl = cfg.get<string>('baseUrl')?.trim();
    const model = cfg.get<string>('model')?.trim();
    const windowTokens = cfg.get<number>('contextWindowTokens') ?? 0;
    const apiKey = await this.context.secrets.get(API_KEY_SECRET);
    if (baseUrl) provider.baseUrl = baseUrl;
    if (model) provider.model = model;
    if (windowTokens > 0) provider.contextWindowTokens = windowTokens;
    if (apiKey) provider.apiKey = apiKey; // no stored key: the server's environment and config.toml apply
    const options: InitializationOptions = { approvalPolicy: cfg.get<ApprovalPolicy>('approvalPolicy') ?? 'ask' };
    if (Object.keys(provider).length) options.provider = provider;
    return options;
  }

  dispose(): void {
    this.clientDisposables.forEach((d) => d.dispose());
    this.disposables.forEach((d) => d.dispose());
    this.client.dispose();
    this.changed.dispose();
  }
}

