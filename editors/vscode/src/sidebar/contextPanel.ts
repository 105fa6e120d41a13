// The context-view panel: renders getContextView for the current session; refreshes after each turn.
import * as vscode from 'vscode';
import type { ServerManager } from '../serverManager';
import { buildWebviewHtml, makeNonce } from './html';
import type { FromWebview, ToWebview } from './messages';

export class ContextPanel {
  private static current: ContextPanel | undefined;
  private readonly panel: vscode.WebviewPanel;

  static show(context: vscode.ExtensionContext, server: ServerManager, sessionId: string): void {
    if (ContextPanel.current) {
      ContextPanel.current.sessionId = sessionId;
      ContextPanel.current.panel.reveal(vscode.ViewColumn.Active);
      void ContextPanel.current.refresh();
      return;
    }
    ContextPanel.current = new ContextPanel(context, server, sessionId);
  }

  /** Refresh the open panel if it shows this session. */
  static refreshFor(sessionId: string): void {
    if (ContextPanel.current?.sessionId === sessionId) void ContextPanel.current.refresh();
  }

  private constructor(context: vscode.ExtensionContext, private readonly server: ServerManager, private sessionId: string) {
    const media = vscode.Uri.joinPath(context.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(context.extensionUri, 'dist');
    this.panel = vscode.window.createWebviewPanel('threadline.contextView', 'Threadline Context', vscode.ViewColumn.Active,
      { enableScripts: true, localResourceRoots: [media, dist] });
    const webview = this.panel.webview;
    webview.html = buildWebviewHtml({
      cspSource: webview.cspSource, nonce: makeNonce(), view: 'contextView', title: 'Threadline Context',
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'webview.css')).toString(),
    });
    webview.onDidReceiveMessage((m: FromWebview) => {
      if (m.type === 'ready' || m.type === 'refreshContextView') void this.refresh();
    });
    this.panel.onDidDispose(() => (ContextPanel.current = undefined));
  }

  private async refresh(): Promise<void> {
    try {
      const cfgWindow = vscode.workspace.getConfiguration('threadline').get<number>('contextWindowTokens') ?? 0;
      const view = await this.server.client.request('getContextView', {
        sessionId: this.sessionId, ...(cfgWindow > 0 ? { contextWindowTokens: cfgWindow } : {}),
      });
      this.post({ type: 'contextView', view, sessionTitle: this.sessionId });
    } catch (err) {
      this.post({ type: 'error', message: `Cannot build the context view: ${(err as Error).message}` });
    }
  }

  private post(msg: ToWebview): void {
    void this.panel.webview.postMessage(msg);
  }
}
