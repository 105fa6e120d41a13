// Activation: the server manager, the sidebar, the artifact documents, the context view and the commands.
import * as vscode from 'vscode';
import { ARTIFACT_SCHEME, ArtifactProvider } from './artifacts';
import { DIFF_SCHEME, DiffDocuments } from './diffs';
import { EditorBridge } from './editor';
import { ServerManager } from './serverManager';
import { ContextPanel } from './sidebar/contextPanel';
import { processPickItems } from './sidebar/processes';
import { SidebarProvider } from './sidebar/provider';
import { TASK_DIFF_SCHEME, TasksView } from './tasksView';
import type { SessionInfo } from './rpc/protocol';

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('Threadline');
  const editor = new EditorBridge();
  const server = new ServerManager(context, output, editor);
  const diffs = new DiffDocuments();
  const sidebar = new SidebarProvider(context, server, diffs);
  const artifacts = new ArtifactProvider(server);
  const tasks = new TasksView(server);

  const requireSession = (): string | undefined => {
    if (!sidebar.sessionId) void vscode.window.showInformationMessage('Threadline: no session yet. Submit a message or create a session first.');
    return sidebar.sessionId;
  };
  const command = (id: string, fn: (...args: any[]) => unknown) =>
    vscode.commands.registerCommand(id, async (...args: any[]) => {
      try {
        await fn(...args);
      } catch (err) {
        void vscode.window.showErrorMessage(`Threadline: ${(err as Error).message}`);
      }
    });

  context.subscriptions.push(
    output, editor, server, sidebar,
    vscode.window.onDidChangeActiveTextEditor(() => editor.activeChanged()),
    command('threadline.addSelection', async () => {
      if (!editor.addSelection()) throw new Error('open a file and select the lines to attach');
      await sidebar.reveal();
    }),
    vscode.window.registerWebviewViewProvider(SidebarProvider.viewId, sidebar, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(ARTIFACT_SCHEME, artifacts),
    diffs, vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, diffs),
    sidebar.onUpdate((p) => {
      if (p.update.kind === 'turnCompleted' || p.update.kind === 'contextCompacted') ContextPanel.refreshFor(p.sessionId);
      if (p.update.kind === 'turnCompleted' || p.update.kind === 'turnStarted') tasks.refresh();
    }),
    tasks, vscode.window.registerTreeDataProvider(TasksView.viewId, tasks),
    vscode.workspace.registerTextDocumentContentProvider(TASK_DIFF_SCHEME, tasks),
    command('threadline.tasks.refresh', () => tasks.refresh()),
    command('threadline.tasks.openDiff', (row?: unknown) => tasks.openDiff(row as string)),
    command('threadline.tasks.merge', (row?: unknown) => tasks.merge(row as string)),
    command('threadline.tasks.discard', (row?: unknown) => tasks.discard(row as string)),
    command('threadline.newSession', async () => {
      await sidebar.reveal();
      await sidebar.newSession();
    }),
    command('threadline.submit', async (text?: string) => {
      const input = typeof text === 'string' ? text : await vscode.window.showInputBox({
        title: 'Threadline: Submit', prompt: 'What should Threadline do?', placeHolder: 'Describe the task', ignoreFocusOut: true,
      });
      if (!input?.trim()) return;
      await sidebar.reveal();
      await sidebar.submit(input.trim());
    }),
    command('threadline.cancelTurn', () => sidebar.cancel()),
    command('threadline.pickModel', () => sidebar.pickModel()),
    command('threadline.compactNow', () => requireSession() && sidebar.compactNow()),
    command('threadline.steerTurn', async (text?: string) => {
      const input = typeof text === 'string' ? text : await vscode.window.showInputBox({
        title: 'Threadline: Steer the Running Turn', prompt: 'The model reads this after the tool that is running now', ignoreFocusOut: true,
      });
      if (input?.trim()) await sidebar.steer(input.trim());
    }),
    command('threadline.rewindFiles', () => requireSession() && sidebar.rewindFiles()),
    command('threadline.showProcesses', async () => {
      const sessionId = requireSession();
      if (!sessionId) return;
      const { processes } = await server.client.request('listProcesses', { sessionId });
      if (!processes.length) {
        void vscode.window.showInformationMessage('Threadline: this session started no background process.');
        return;
      }
      const pick = await vscode.window.showQuickPick(processPickItems(processes), {
        title: 'Threadline: Background Processes', placeHolder: 'Pick a running process to stop it',
      });
      if (!pick?.running) return;
      const { process } = await server.client.request('stopProcess', { sessionId, processId: pick.processId });
      void vscode.window.showInformationMessage(`Threadline: ${process.processId} ${process.status} (exit code ${process.exitCode ?? '?'}).`);
    }),
    command('threadline.allowEdit', () => sidebar.answerFromDiff(DiffDocuments.toolCallOf(vscode.window.activeTextEditor?.document.uri), 'allowOnce')),
    command('threadline.rewindEdit', () => sidebar.rewindFromDiff(DiffDocuments.toolCallOf(vscode.window.activeTextEditor?.document.uri))),
    command('threadline.rejectEdit', () => sidebar.answerFromDiff(DiffDocuments.toolCallOf(vscode.window.activeTextEditor?.document.uri), 'reject')),
    command('threadline.showContextView', () => {
      const id = requireSession();
      if (id) ContextPanel.show(context, server, id);
    }),
    command('threadline.openArtifact', async (sessionId?: string, artifactId?: string) => {
      const sid = sessionId ?? requireSession();
      if (!sid) return;
      let id = artifactId;
      if (!id) {
        const known = sidebar.knownArtifacts(sid);
        id = known.length
          ? (await vscode.window.showQuickPick(known.reverse(), { title: 'Threadline: Open Artifact', placeHolder: 'Artifact of this session' }))
          : await vscode.window.showInputBox({ title: 'Threadline: Open Artifact', prompt: 'Artifact id' });
      }
      if (!id) return;
      const pages = await artifacts.pages(sid, id);
      let page = 1;
      if (!artifactId && pages > 1) {
        const pick = await vscode.window.showQuickPick(Array.from({ length: pages }, (_, i) => `${i + 1}`), { title: `Page (of ${pages})` });
        page = Number(pick ?? 1);
      }
      await artifacts.open(sid, id, page);
    }),
    command('threadline.artifactNextPage', () => artifacts.turnPage(1)),
    command('threadline.artifactPreviousPage', () => artifacts.turnPage(-1)),
    command('threadline.setApiKey', async () => {
      const key = await vscode.window.showInputBox({
        title: 'Threadline: Set API Key', prompt: 'Stored in VS Code SecretStorage and sent to the server at start-up. Leave empty to remove it.',
        password: true, ignoreFocusOut: true,
      });
      if (key === undefined) return;
      await server.setApiKey(key.trim() || undefined);
      void vscode.window.showInformationMessage(key.trim() ? 'Threadline API key saved.' : 'Threadline API key removed; the server environment applies.');
    }),
    command('threadline.restartServer', () => server.restart()),
    command('threadline.attachSession', async () => {
      const sessions = await sidebar.daemonSessions();
      const state = (s: SessionInfo) => (s.waitingForApproval ? 'waiting for approval' : s.running ? 'running' : 'idle');
      const picked = await vscode.window.showQuickPick(
        sessions.map((s) => ({
          label: s.title || '(untitled)',
          description: `${state(s)} · ${s.attachedClients ?? 0} attached`,
          detail: `${s.cwd} · ${s.sessionId}`,
          sessionId: s.sessionId,
        })),
        { title: 'Threadline: Attach to Running Session', placeHolder: 'A session the daemon has (running ones first)' });
      if (!picked) return;
      await sidebar.reveal();
      await sidebar.attachTo(picked.sessionId);
    }),
    command('threadline.showLog', () => output.show(true)),
  );
  void server.client.start().catch((err) => output.appendLine(`[client] ${(err as Error).message}`));
}

export function deactivate(): void {
  /* subscriptions dispose the server manager, which stops the server */
}
