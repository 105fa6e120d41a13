// Editor grounding (issue 34): the server's editor/* requests answered from VS Code's own language features
// (vscode.languages.getDiagnostics, the execute*Provider commands), and what the user points at: "Add Selection
// to Threadline", the active file as a removable chip, @-completion of files (the webview asks for candidates).
import * as vscode from 'vscode';
import type { CancellationToken } from 'vscode-jsonrpc/node';
import type { EditorAnswerer, EditorMethod, EditorRequests } from './rpc/client';
import type * as G from './rpc/protocol.generated';

type Range = G.Range;
type ContextItem = G.SelectionContext | G.FileContext | G.DiagnosticsContext;

const toRange = (r: vscode.Range): Range => ({
  start: { line: r.start.line, character: r.start.character },
  end: { line: r.end.line, character: r.end.character },
});

function diagnosticItem(uri: vscode.Uri, d: vscode.Diagnostic): G.Diagnostic {
  const code = typeof d.code === 'object' ? d.code.value : d.code;
  return {
    uri: uri.toString(),
    range: toRange(d.range),
    severity: (d.severity + 1) as 1 | 2 | 3 | 4, // vscode counts from 0 (Error), LSP from 1
    message: d.message,
    ...(d.source ? { source: d.source } : {}),
    ...(code !== undefined ? { code } : {}),
  };
}

function locationItem(l: vscode.Location | vscode.LocationLink): G.Location {
  return 'targetUri' in l
    ? { uri: l.targetUri.toString(), range: toRange(l.targetSelectionRange ?? l.targetRange) }
    : { uri: l.uri.toString(), range: toRange(l.range) };
}

export class EditorBridge implements EditorAnswerer {
  private pending: ContextItem[] = [];
  private activeDropped: string | undefined; // the active file the user removed the chip of
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fired when the chips (pending selections, the active file) change. */
  readonly onDidChange = this.changed.event;

  capabilities(): G.EditorCapabilities | undefined {
    const cfg = vscode.workspace.getConfiguration('threadline.editor');
    if (!cfg.get<boolean>('enabled', true)) return undefined;
    return {
      diagnostics: true, definition: true, references: true, workspaceSymbols: true,
      diagnosticsAfterEdit: cfg.get<boolean>('diagnosticsAfterEdit', true),
      settleMs: cfg.get<number>('settleMs', 1500),
    };
  }

  async answer<M extends EditorMethod>(method: M, params: EditorRequests[M][0], _token: CancellationToken): Promise<EditorRequests[M][1]> {
    switch (method) {
      case 'editor/diagnostics':
        return (await this.diagnostics(params as G.EditorDiagnosticsParams)) as EditorRequests[M][1];
      case 'editor/definition':
      case 'editor/references':
        return (await this.locations(method, params as G.EditorPositionParams)) as EditorRequests[M][1];
      case 'editor/workspaceSymbols':
        return (await this.symbols(params as G.EditorWorkspaceSymbolsParams)) as EditorRequests[M][1];
    }
    throw new Error(`unknown method ${method}`);
  }

  private async diagnostics(params: G.EditorDiagnosticsParams): Promise<G.EditorDiagnosticsResult> {
    if (!params.uris?.length) {
      return { items: vscode.languages.getDiagnostics().flatMap(([uri, ds]) => ds.map((d) => diagnosticItem(uri, d))) };
    }
    const items: G.Diagnostic[] = [];
    for (const raw of params.uris) {
      const uri = vscode.Uri.parse(raw);
      // An open document follows the file on disk when it has no unsaved changes; a closed one is opened (not
      // shown) so the language features check it at all.
      await vscode.workspace.openTextDocument(uri).then(undefined, () => undefined);
      items.push(...vscode.languages.getDiagnostics(uri).map((d) => diagnosticItem(uri, d)));
    }
    return { items };
  }

  private async locations(method: 'editor/definition' | 'editor/references', params: G.EditorPositionParams): Promise<G.EditorLocationsResult> {
    const uri = vscode.Uri.parse(params.uri);
    await vscode.workspace.openTextDocument(uri);
    const position = new vscode.Position(params.position.line, params.position.character);
    const command = method === 'editor/definition' ? 'vscode.executeDefinitionProvider' : 'vscode.executeReferenceProvider';
    const found = (await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>(command, uri, position)) ?? [];
    return { locations: found.map(locationItem) };
  }

  private async symbols(params: G.EditorWorkspaceSymbolsParams): Promise<G.EditorWorkspaceSymbolsResult> {
    const found = (await vscode.commands.executeCommand<vscode.SymbolInformation[]>('vscode.executeWorkspaceSymbolProvider', params.query)) ?? [];
    return {
      symbols: found.map((s) => ({
        name: s.name,
        kind: s.kind + 1, // vscode.SymbolKind counts from 0 (File), LSP's from 1
        uri: s.location.uri.toString(),
        range: toRange(s.location.range),
        ...(s.containerName ? { containerName: s.containerName } : {}),
      })),
    };
  }

  // --- what the user points at ---------------------------------------------------------------------------

  /** "Add Selection to Threadline": the active editor's selection (the current line when it is empty). */
  addSelection(editor = vscode.window.activeTextEditor): ContextItem | undefined {
    if (!editor || editor.document.uri.scheme !== 'file') return undefined;
    const sel = editor.selection.isEmpty ? editor.document.lineAt(editor.selection.active.line).range : editor.selection;
    const item: G.SelectionContext = { kind: 'selection', uri: editor.document.uri.toString(), text: editor.document.getText(sel), range: toRange(sel) };
    this.pending.push(item);
    this.changed.fire();
    return item;
  }

  /** The chips the sidebar shows: the pending selections, then the active file (unless removed). */
  chips(): { label: string; index: number }[] {
    const chips = this.pending.map((item, index) => ({ label: chipLabel(item), index }));
    const active = this.activeFile();
    if (active) chips.push({ label: vscode.workspace.asRelativePath(vscode.Uri.parse(active.uri)), index: -1 });
    return chips;
  }

  /** Remove a chip (index -1: the active file, until another file becomes active). */
  remove(index: number): void {
    if (index < 0) this.activeDropped = this.activeFile()?.uri;
    else this.pending.splice(index, 1);
    this.changed.fire();
  }

  activeChanged(): void {
    if (this.activeFile()?.uri !== this.activeDropped) this.activeDropped = undefined;
    this.changed.fire();
  }

  private activeFile(): G.FileContext | undefined {
    if (!vscode.workspace.getConfiguration('threadline.editor').get<boolean>('attachActiveFile', true)) return undefined;
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc || doc.uri.scheme !== 'file') return undefined;
    const uri = doc.uri.toString();
    return uri === this.activeDropped ? undefined : { kind: 'file', uri };
  }

  /** The context of the next submitTurn; the pending selections are taken (the active file stays). */
  take(): ContextItem[] | undefined {
    const items: ContextItem[] = [...this.pending];
    const active = this.activeFile();
    if (active && !items.some((i) => i.kind === 'file' && i.uri === active.uri)) items.push(active);
    this.pending = [];
    this.changed.fire();
    return items.length ? items : undefined;
  }

  /** @-completion: workspace files whose path contains `prefix`, relative, at most 50. */
  async complete(prefix: string): Promise<string[]> {
    const files = await vscode.workspace.findFiles('**/*', '**/{node_modules,.git}/**', 2000);
    const needle = prefix.toLowerCase();
    return files.map((u) => vscode.workspace.asRelativePath(u, false)).filter((p) => p.toLowerCase().includes(needle)).sort().slice(0, 50);
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function chipLabel(item: ContextItem): string {
  const name = vscode.workspace.asRelativePath(vscode.Uri.parse(item.uri));
  return item.kind === 'selection' && item.range ? `${name}:${item.range.start.line + 1}-${item.range.end.line + 1}` : name;
}
