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
