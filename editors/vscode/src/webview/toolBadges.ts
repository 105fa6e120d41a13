// A short badge before a tool's name on its card, for the tools that reach outside the session folder from the
// server: web_fetch and web_search (B-WEB-1). Other tools have none.
export interface ToolBadge { text: string; title: string }

const BADGES: Record<string, ToolBadge> = {
  web_fetch: { text: 'web', title: 'Fetches a page from the web (the server asks once per host unless a rule allows it)' },
  web_search: { text: 'web', title: 'Searches the web through the configured search provider' },
};

export function toolBadge(tool: string): ToolBadge | undefined {
  return BADGES[tool];
}

/** The title shown after the tool's name on its card: the server's title ("write_file: notes.txt") without the
 *  name the card already shows before it, so a row reads "write_file  notes.txt", not the name twice. */
export function cardTitle(tool: string, title: string | undefined): string {
  if (!title || title === tool) return '';
  return title.startsWith(`${tool}: `) ? title.slice(tool.length + 2) : title;
}
