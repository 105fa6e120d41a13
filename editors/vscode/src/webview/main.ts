// Webview entry: builds the chat sidebar or the context-view panel and wires it to the extension host.
import type { FromWebview, ToWebview } from '../sidebar/messages';
import { Chat } from './chat';
import { ContextView } from './contextView';

declare function acquireVsCodeApi(): { postMessage(msg: unknown): void; getState(): unknown; setState(s: unknown): void };

const vscode = acquireVsCodeApi();
const post = (msg: FromWebview) => vscode.postMessage(msg);
const root = document.getElementById('app')!;
const ui = document.body.dataset.view === 'contextView' ? new ContextView(root, post) : new Chat(root, post);
window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const msg = event.data;
  if (msg && typeof msg === 'object' && 'type' in msg) ui.handle(msg);
});
post({ type: 'ready' });
