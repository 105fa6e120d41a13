// The last sessionUpdate seq shown per session (the sidebar drops an update at or below it: a replay overlapping
// what came live). A new server numbers every session's updates from 1 again, so when the server is replaced or
// restarted only the attached sessions keep theirs (their re-attach asks for what came after it; a daemon that
// restarted answers truncated and the transcript reloads); any other session's next updates must not be dropped.
export function forgetUnattached(seqs: Map<string, number>, attached: ReadonlySet<string>): void {
  for (const id of [...seqs.keys()]) if (!attached.has(id)) seqs.delete(id);
}

// After the bridge to the server restarts: forget what no attachment keeps, and say which session to re-attach (the
// one on screen, if it was attached: its attachSession asks for what came after the last seq it showed).
export function afterRestart(seqs: Map<string, number>, attached: ReadonlySet<string>, current: string | undefined): string | undefined {
  forgetUnattached(seqs, attached);
  return current !== undefined && attached.has(current) ? current : undefined;
}
