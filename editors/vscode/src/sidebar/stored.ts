// What the sidebar reads back of a stored session when it shows it: the transcript page by page, and the events the
// chat draws beside it (past compactions, applied edits' diffs, plan updates).
import type { ThreadlineClient } from '../rpc/client';
import type { EventItem, TranscriptItem } from '../rpc/protocol';

/** The whole transcript; ``noteArtifact`` is told each artifact a tool result names (read_artifact offers them). */
export async function readHistory(client: ThreadlineClient, sessionId: string, noteArtifact: (id: string) => void): Promise<TranscriptItem[]> {
  const items: TranscriptItem[] = [];
  let afterSeq: number | undefined;
  for (let page = 0; page < 200; page++) {
    const r = await client.request('readTranscript', { sessionId, limit: 500, ...(afterSeq !== undefined ? { afterSeq } : {}) });
    items.push(...r.items);
    for (const it of r.items) {
      const art = it.role === 'tool' ? /^\[artifact ([\w.-]+)\]/.exec(it.content ?? '') : null;
      if (art) noteArtifact(art[1]);
    }
    if (r.nextSeq === undefined || r.nextSeq === null || !r.items.length) break;
    afterSeq = r.items[r.items.length - 1].seq;
  }
  return items;
}

/** Past compactions (shown in the resumed chat after their turn), applied edits' diffs (fileDiff, on their tool
 *  cards) and plan updates; a server without readEvents gives none. */
export async function readStoredEvents(client: ThreadlineClient, sessionId: string): Promise<EventItem[]> {
  const events: EventItem[] = [];
  try {
    let afterId: number | undefined;
    for (let page = 0; page < 50; page++) {
      const r = await client.request('readEvents', { sessionId, kinds: ['contextCompacted', 'fileDiff', 'planUpdated'], limit: 1000, ...(afterId !== undefined ? { afterId } : {}) });
      events.push(...r.events);
      if (r.nextId === undefined || r.nextId === null) break;
      afterId = r.nextId;
    }
  } catch {
    /* what was read so far */
  }
  return events;
}
