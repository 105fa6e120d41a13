// Safe markdown: markdown-it with raw HTML disabled (so `<script>` or `<img onerror>` from a model is shown as
// text), its link validator (no javascript:/vbscript:/file:/data: links) and links forced to open outside.
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
md.linkify.set({ fuzzyLink: false }); // "notes.md" is a file name, not a link to a .md domain

const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet('rel', 'noopener noreferrer');
  tokens[idx].attrSet('title', tokens[idx].attrGet('href') ?? '');
  return defaultLinkOpen(tokens, idx, options, env, self);
};

export function renderMarkdown(text: string): string {
  return md.render(text);
}
