// What goes with the next message (issue 34): the chips (selections added with "Add Selection to Threadline",
// the active file, each removable) and @-completion of workspace files in the input.
import type { FromWebview, ToWebview } from '../sidebar/messages';
import { h } from './dom';

type Post = (msg: FromWebview) => void;
const MENTION = /(?:^|\s)@([\w./-]*)$/;

export class Chips {
  readonly chips = h('div', { id: 'chips', class: 'chips', 'aria-label': 'Attached to the next message' });
  readonly completions = h('div', { id: 'completions', class: 'completions', role: 'listbox', hidden: true });

  constructor(private readonly input: HTMLTextAreaElement, private readonly post: Post) {
    this.chips.addEventListener('click', (e) => {
      const x = (e.target as HTMLElement).closest('[data-chip]') as HTMLElement | null;
      if (x) this.post({ type: 'removeChip', index: Number(x.dataset.chip) });
    });
    input.addEventListener('input', () => {
      const m = MENTION.exec(input.value.slice(0, input.selectionStart));
      if (m) this.post({ type: 'complete', prefix: m[1] });
      else this.completions.hidden = true;
    });
    input.addEventListener('keydown', (e) => {
      const first = this.completions.querySelector('button') as HTMLButtonElement | null;
      if (e.key === 'Tab' && first && !this.completions.hidden) {
        e.preventDefault();
        this.accept(first.dataset.path!);
      }
    });
    this.completions.addEventListener('click', (e) => {
      const b = (e.target as HTMLElement).closest('button') as HTMLButtonElement | null;
      if (b) this.accept(b.dataset.path!);
    });
  }

  handle(msg: ToWebview): boolean {
    if (msg.type === 'chips') {
      this.chips.replaceChildren(...msg.chips.map((c) =>
        h('span', { class: 'chip', title: c.label }, c.label, h('button', { class: 'chip-remove', 'data-chip': String(c.index), title: `Remove ${c.label}`, 'aria-label': `Remove ${c.label}`, text: '×' }))));
      return true;
    }
    if (msg.type === 'completions') {
      const m = MENTION.exec(this.input.value.slice(0, this.input.selectionStart));
      // Answers can come back out of order (each is a file search): one for a prefix the input has since moved
      // past is stale and changes nothing, else an earlier prefix's late answer would hide the current list.
      if (m && m[1] !== msg.prefix) return true;
      if (!m || !msg.items.length) {
        this.completions.hidden = true;
        return true;
      }
      this.completions.replaceChildren(...msg.items.map((p) => h('button', { class: 'completion', role: 'option', 'data-path': p, text: p })));
      this.completions.hidden = false;
      return true;
    }
    return false;
  }

  /** Replace the @prefix before the caret with @path. */
  private accept(path: string): void {
    const caret = this.input.selectionStart;
    const before = this.input.value.slice(0, caret).replace(/@[\w./-]*$/, `@${path} `);
    this.input.value = before + this.input.value.slice(caret);
    this.input.selectionStart = this.input.selectionEnd = before.length;
    this.completions.hidden = true;
    this.input.focus();
  }
}
