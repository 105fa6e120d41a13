// The webview document: one bundled script and one stylesheet, both loaded under a strict CSP with a nonce.
// No inline script or style, no eval, no remote content; model output is rendered by the script as escaped text.

export interface WebviewHtmlOptions {
  /** `webview.cspSource` in VS Code; the test harness passes its own origin. */
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce: string;
  /** Which UI the script builds: the chat sidebar or the context-view panel. */
  view: 'sidebar' | 'contextView';
  title: string;
}

export function buildWebviewHtml(o: WebviewHtmlOptions): string {
  const csp = [
    "default-src 'none'",
    `style-src ${o.cspSource}`,
    `font-src ${o.cspSource}`,
    `img-src ${o.cspSource} data:`,
    `script-src 'nonce-${o.nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeAttr(o.styleUri)}">
<title>${escapeAttr(o.title)}</title>
</head>
<body data-view="${o.view}">
<div id="app" aria-live="polite"></div>
<script nonce="${o.nonce}" src="${escapeAttr(o.scriptUri)}"></script>
</body>
</html>`;
}

export function makeNonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 32; i++) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
