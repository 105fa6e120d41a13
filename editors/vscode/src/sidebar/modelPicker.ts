// The model picker: listModels' models with window and prices (the items are built in ../models.ts); the pick
// applies to the current session from its next model call (updateSession), or to the next session created when
// there is none yet.
import * as vscode from 'vscode';
import { modelButtonLabel, modelPickItems } from '../models';
import type { SidebarHost } from './host';

export class ModelPicker {
  private next: string | null | undefined; // picked with no session yet: the next createSession's model

  constructor(private readonly host: SidebarHost) {}

  /** The model picked while no session was open (null: the server's default), until a session takes it. */
  get forNextSession(): string | null | undefined {
    return this.next;
  }

  /** createSession passed it on. */
  taken(): void {
    this.next = undefined;
  }

  /** The sidebar control's label for a session's model. */
  show(name: string | null | undefined): void {
    this.host.post({ type: 'model', label: modelButtonLabel(name) });
  }

  async pick(): Promise<void> {
    const client = this.host.server.client;
    const sessionId = this.host.currentSession();
    const current = sessionId ? await this.sessionModel(sessionId) : this.next;
    const listed = await client.request('listModels', {});
    const items = modelPickItems(listed, current);
    if (!items.length) {
      void vscode.window.showInformationMessage('Threadline: no models configured. Add [models.NAME] to config.toml.');
      return;
    }
    const pick = await vscode.window.showQuickPick(items, {
      title: 'Threadline: Pick the Model', placeHolder: sessionId ? 'Applies from the next model call' : 'For the next session',
    });
    if (!pick) return;
    if (!sessionId) {
      this.next = pick.name;
      this.show(pick.name);
      return;
    }
    const r = await client.request('updateSession', { sessionId, model: pick.name });
    this.show(r.model);
    await this.host.refreshSessions();
    await this.host.estimateMeter(sessionId); // the window is the new model's from now on
  }

  private async sessionModel(sessionId: string): Promise<string | null> {
    const sessions = await this.host.listSessions();
    return sessions.find((s) => s.sessionId === sessionId)?.model ?? null;
  }
}
