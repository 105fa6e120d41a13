// What the sidebar's action modules (rewindActions.ts, modelPicker.ts) need of the sidebar view, handed to them
// as callbacks so the provider's own state (current session, webview) stays private to it.
import type { ServerManager } from '../serverManager';
import type { SessionInfo } from '../rpc/protocol';
import type { ToWebview } from './messages';

export interface SidebarHost {
  readonly server: ServerManager;
  currentSession(): string | undefined;
  post(msg: ToWebview): void;
  selectSession(sessionId: string): Promise<void>;
  listSessions(): Promise<SessionInfo[]>;
  refreshSessions(): Promise<SessionInfo[]>;
  estimateMeter(sessionId: string): Promise<void>;
}
