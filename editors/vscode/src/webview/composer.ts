// The composer under the conversation: the message box, Send/Steer, Queue and Cancel, what goes with the next
// message (chips.ts) and `/` completion of the session's commands. It hands the typed text to the chat, which shows
// it and sends it; it never renders the conversation.
import { Chips } from './chips';
import type { FromWebview, ToWebview } from '../sidebar/messages';
import type { CommandInfo } from '../rpc/protocol';
import { h } from './dom';
import { commandLabel, completeCommand, slashMatches } from './issue33';

type Post = (msg: FromWebview) => void;
/** Send ``text``: start a turn when idle; while one runs, steer it or, with ``queue``, run it after. */
type Send = (text: string, queue: boolean) => void;

export class Composer {
  private commands: CommandInfo[] = []; // the session's slash commands (listCommands), for `/` completion
  private readonly suggestions = h('ul', { id: 'slash-suggestions', class: 'slash-suggestions', role: 'listbox', hidden: true });
  private readonly input = h('textarea', {
    id: 'input', rows: 3, placeholder: 'Ask Threadline… (Enter to send, Shift+Enter for a new line)', 'aria-label': 'Message',
  });
  private readonly sendBtn = h('button', { id: 'send', class: 'primary', title: 'Send (Enter)', text: 'Send' });
  private readonly cancelBtn = h('button', { id: 'cancel', title: 'Cancel the running turn (Escape)', text: 'Cancel', disabled: true });
  private readonly queueBtn = h('button', { id: 'queue', title: 'Run this message right after the running turn', text: 'Queue', hidden: true });

  private readonly chips: Chips;
  readonly element: HTMLElement;

  constructor(private readonly post: Post, private readonly send: Send) {
    this.chips = new Chips(this.input, post);
    this.element = h('footer', { class: 'composer' }, this.chips.chips, this.chips.completions, this.suggestions, this.input,
      h('div', { class: 'composer-actions' }, this.cancelBtn, this.queueBtn, this.sendBtn));

    this.sendBtn.addEventListener('click', () => this.submit());
    this.queueBtn.addEventListener('click', () => this.submit(true));
    this.cancelBtn.addEventListener('click', () => this.post({ type: 'cancel' }));
    this.input.addEventListener('input', () => this.suggest());
    this.suggestions.addEventListener('click', (e) => {
      const name = ((e.target as HTMLElement).closest('[data-command]') as HTMLElement | null)?.dataset.command;
      const command = this.commands.find((c) => c.name === name);
      if (command) this.complete(command);
    });
    this.input.addEventListener('keydown', (e) => {
      const first = this.suggestions.hidden ? undefined : slashMatches(this.commands, this.input.value)[0];
      if (first && e.key === 'Tab') {
        e.preventDefault();
        this.complete(first);
        return;
      }
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
    });
  }

  /** The messages meant for the composer (chips, completions, commands, prefill, focus); false for the rest. */
  handle(msg: ToWebview): boolean {
    if (this.chips.handle(msg)) return true;
    switch (msg.type) {
      case 'focusInput':
        this.input.focus();
        return true;
      case 'commands':
        this.commands = msg.commands;
        this.suggest();
        return true;
      case 'prefill':
        this.input.value = msg.text;
        this.input.focus();
        return true;
    }
    return false;
  }

  /** While a turn runs, Send steers it, Queue runs a message after it and Cancel stops it. */
  setRunning(running: boolean): void {
    this.cancelBtn.disabled = !running;
    this.queueBtn.hidden = !running;
    this.sendBtn.textContent = running ? 'Steer' : 'Send';
    this.sendBtn.title = running ? 'Add this to the running turn: the model reads it after the current tool (Enter)' : 'Send (Enter)';
  }

  private submit(queue = false): void {
    const text = this.input.value.trim();
    if (!text) return;
    this.input.value = '';
    this.send(text, queue);
  }

  /** `/` completion: the session's commands matching what is typed, until a space follows the name. */
  private suggest(): void {
    const matches = slashMatches(this.commands, this.input.value);
    this.suggestions.hidden = matches.length === 0;
    this.suggestions.replaceChildren(...matches.map((c) =>
      h('li', { class: 'slash-suggestion', role: 'option', 'data-command': c.name, text: commandLabel(c) })));
  }

  private complete(command: CommandInfo): void {
    this.input.value = completeCommand(command);
    this.suggest();
    this.input.focus();
  }
}
