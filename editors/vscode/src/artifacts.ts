// Read-only virtual documents for tool-output artifacts: threadline-artifact:/<sessionId>/<artifactId>.log?page=N,
// each page fetched with readArtifact (a range of lines), so a large artifact is never loaded whole.
import * as vscode from 'vscode';
import type { ServerManager } from './serverManager';

export const ARTIFACT_SCHEME = 'threadline-artifact';
export const PAGE_LINES = 2000;

export interface ArtifactRef {
  sessionId: string;
  artifactId: string;
  page: number;
}

export function artifactUri(ref: ArtifactRef, pages?: number): vscode.Uri {
  const name = pages && pages > 1 ? `${ref.artifactId} (page ${ref.page} of ${pages}).log` : `${ref.artifactId}.log`;
  return vscode.Uri.from({ scheme: ARTIFACT_SCHEME, path: `/${ref.sessionId}/${name}`, query: `id=${encodeURIComponent(ref.artifactId)}&page=${ref.page}` });
}

export function parseArtifactUri(uri: vscode.Uri): ArtifactRef {
  const q = new URLSearchParams(uri.query);
  const sessionId = uri.path.split('/')[1];
  return { sessionId, artifactId: q.get('id') ?? '', page: Math.max(1, Number(q.get('page') ?? 1)) };
}

export class ArtifactProvider implements vscode.TextDocumentContentProvider {
  /** Total lines per artifact, learned on first read (for page counts). */
  private readonly lines = new Map<string, number>();

  constructor(private readonly server: ServerManager) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseArtifactUri(uri);
    const start = (ref.page - 1) * PAGE_LINES + 1;
    const result = await this.server.client.request('readArtifact', {
      sessionId: ref.sessionId, artifactId: ref.artifactId, lineRange: { start, end: start + PAGE_LINES - 1 },
    });
    this.lines.set(ref.artifactId, result.totalLines);
    return result.content ?? '';
  }

  async pages(sessionId: string, artifactId: string): Promise<number> {
    let total = this.lines.get(artifactId);
    if (total === undefined) {
      const r = await this.server.client.request('readArtifact', { sessionId, artifactId, lineRange: { start: 1, end: 1 } });
      total = r.totalLines;
      this.lines.set(artifactId, total);
    }
    return Math.max(1, Math.ceil(total / PAGE_LINES));
  }

  async open(sessionId: string, artifactId: string, page = 1): Promise<vscode.TextEditor> {
    const pages = await this.pages(sessionId, artifactId);
    const ref = { sessionId, artifactId, page: Math.min(Math.max(1, page), pages) };
    const doc = await vscode.workspace.openTextDocument(artifactUri(ref, pages));
    return vscode.window.showTextDocument(doc, { preview: false, preserveFocus: false });
  }

  /** Move the active artifact editor by `delta` pages. */
  async turnPage(delta: number): Promise<void> {
    const uri = vscode.window.activeTextEditor?.document.uri;
    if (uri?.scheme !== ARTIFACT_SCHEME) return;
    const ref = parseArtifactUri(uri);
    const pages = await this.pages(ref.sessionId, ref.artifactId);
    const page = ref.page + delta;
    if (page < 1 || page > pages) {
      void vscode.window.showInformationMessage(`Artifact ${ref.artifactId} has ${pages} page${pages > 1 ? 's' : ''}.`);
      return;
    }
    await this.open(ref.sessionId, ref.artifactId, page);
  }
}
