"""The transcript database schema and its migrations.

The schema version lives in ``PRAGMA user_version``. Migrations run in order at start-up, each in its own
transaction, on a plain ``sqlite3`` connection before the async store opens (start-up is the one moment
nothing else touches the file). A migration never deletes or rewrites a stored message (R-SRC-1).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from server.errors import StorageFailure

V1 = """
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    cwd           TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    parent_id     TEXT,
    forked_at_seq INTEGER,
    last_seq      INTEGER NOT NULL DEFAULT 0,
    approval_policy TEXT
);
CREATE INDEX sessions_cwd ON sessions(cwd, updated_at);

CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT,
    tool_calls   TEXT,
    tool_call_id TEXT,
    name         TEXT,
    reasoning    TEXT,
    images       TEXT,
    status       TEXT NOT NULL DEFAULT 'complete',
    turn_id      TEXT,
    created_at   TEXT NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id    TEXT,
    kind       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX events_session ON events(session_id, kind, id);

CREATE TABLE artifacts (
    id           TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    tool_call_id TEXT,
    path         TEXT NOT NULL,
    total_bytes  INTEGER NOT NULL,
    total_lines  INTEGER NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX artifacts_session ON artifacts(session_id);

CREATE VIRTUAL TABLE messages_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
"""

# v2: each message's token estimate is stored when it is written (B-INC-1), so building a view never
# re-estimates history. Old rows keep NULL and are estimated on read.
V2 = """
ALTER TABLE messages ADD COLUMN tokens INTEGER;
"""

# v3: the text so far of an answer being streamed, one row per turn, so a killed server loses at most the last
# fraction of a second of it. A draft is not a message: it is replaced as it grows, removed in the transaction
# that appends the real message, and turned into an "interrupted" message at the next start if its owner died.
V3 = """
CREATE TABLE drafts (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id    TEXT NOT NULL,
    owner      TEXT NOT NULL,
    content    TEXT NOT NULL,
    reasoning  TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (session_id, turn_id)
);
"""

# v4: reasoning a provider needs back unchanged (Anthropic thinking blocks with signatures, Responses reasoning
# items with encrypted content), a JSON list on the assistant message it came with; never shown, never counted.
V4 = """
ALTER TABLE messages ADD COLUMN reasoning_items TEXT;
"""

# v5: how a tool call ended (ok, error, denied), as the loop knew it live, so a resumed session shows the same
# status; NULL on older rows, which are read by their text (``convert.tool_status``).
V5_TOOL_STATUS = """
ALTER TABLE messages ADD COLUMN tool_status TEXT;
"""

# v6 (file checkpoints): what each file-writing tool call found before it wrote (``before_hash``: the
# content, stored as a blob under $THREADLINE_HOME/checkpoints, NULL when the file was absent or too large to keep)
# and what it left (``after_hash``), so ``rewindFiles`` can restore it and tell an outside edit from ours. Rows of
# kind 'rewind' record what a rewind left, so a later rewind does not take its own work for an outside edit.
V6_FILE_CHECKPOINTS = """
CREATE TABLE file_checkpoints (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind         TEXT NOT NULL DEFAULT 'tool' CHECK (kind IN ('tool', 'rewind')),
    turn_id      TEXT,
    tool_call_id TEXT,
    path         TEXT NOT NULL,
    change       TEXT NOT NULL,
    before_hash  TEXT,
    size         INTEGER NOT NULL DEFAULT 0,
    restorable   INTEGER NOT NULL,
    note         TEXT,
    after_hash   TEXT,
    done         INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL
);
CREATE INDEX file_checkpoints_session ON file_checkpoints(session_id, id);
"""

# v7 (per-session model): the name of the ``[models.NAME]`` a session talks to; NULL means the
# server's default ``[provider]``. Only the name is stored: what it points at lives in config.toml.
V7_SESSION_MODEL = """
ALTER TABLE sessions ADD COLUMN model TEXT;
"""

# v8 (B-TOK-3 with B-CACHE-3): each model's learned ratio of reported to estimated prompt tokens. The ratio shrinks
# the window the pipeline plans with, so a restarted server must start from the one the old server had learned, or
# it would compact at other points than the old one would have (and send other requests).
V8_CALIBRATIONS = """
CREATE TABLE calibrations (
    model      TEXT PRIMARY KEY,
    factor     REAL NOT NULL,
    samples    INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
"""

# v9 (B-CACHE-3, cold start): what a restarted server needs to resume a session's view state without reading its
# whole history, and to say how much of its next request repeats the last one sent. ``view_resume``: where a view
# built on the full history put its safe tail and what it knew of everything before it (a compaction head, as
# JSON), written for sessions that have no stored summarized compaction to resume from. ``sent_requests``: the
# last request sent to the provider, as one digest per message (``stablePrefixTokens``).
# Both are derived data: losing a row only makes the next view slower or its stable prefix 0.
V9_VIEW_RESUME = """
CREATE TABLE view_resume (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    tail_seq   INTEGER NOT NULL,
    head       TEXT NOT NULL
);
CREATE TABLE sent_requests (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    digests    BLOB NOT NULL
);
"""

# v10 (B-CACHE-3, cold start of a history no server has viewed): view snapshots the store keeps as messages are
# appended (``transcript.view_state``), a few per session: the seq of a message that opens a tool-call segment and,
# as JSON, the compaction head of everything before it. A server's first view of a long history written through
# the store resumes from one instead of reading every message. Derived data, like v9's. The table was created under
# the name ``view_checkpoints``, which v12 changes (a step, once applied, is never edited).
V10_VIEW_SNAPSHOTS = """
CREATE TABLE view_checkpoints (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    head       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
"""

# v11 (B-SUB-1, subagents): a child session run by a parent's ``task`` tool call names that call. Its parent is
# ``parent_id`` (a fork's parent is kept there too; a fork has ``forked_at_seq`` and no call). Children are left out
# of ``listSessions`` unless asked for, so they are found by this column.
V11_CHILD_SESSIONS = """
ALTER TABLE sessions ADD COLUMN parent_tool_call_id TEXT;
CREATE INDEX sessions_parent ON sessions(parent_id);
"""

# v12 (one name per thing): v10's table renamed ``view_snapshots``, so that "checkpoint" names only file
# checkpoints (v6). Its rows stay as they are; its one index, the primary key (WITHOUT ROWID), is the table itself.
V12_VIEW_SNAPSHOTS_NAME = """
ALTER TABLE view_checkpoints RENAME TO view_snapshots;
"""

# v13 (issue 50): each session's usage totals (B-CACHE-5: its and its subagents' ``usage``/``childUsage`` events
# summed), kept as the events are stored by a trigger in the same transaction, and filled from the events already
# stored. ``listSessions`` read them by summing every such event (json_extract on each) at every call: 15 ms at
# 2,100 model calls, growing with every call a user ever made. Derived data: the events stay the record.
_USAGE = ("inputTokens", "outputTokens", "cachedInputTokens", "cacheWriteTokens")
_USAGE_COLUMNS = "input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, cost_usd"


def v13_session_usage(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE session_usage (session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,"
        " input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cached_input_tokens INTEGER NOT NULL,"
        " cache_write_tokens INTEGER NOT NULL, cost_usd REAL) WITHOUT ROWID"
    )
    added = ", ".join(f"ifnull(json_extract(NEW.payload, '$.{f}'), 0)" for f in _USAGE)
    summed = ", ".join(f"{c} = {c} + excluded.{c}" for c in _USAGE_COLUMNS.split(", ")[:-1])
    conn.execute(
        "CREATE TRIGGER session_usage_add AFTER INSERT ON events WHEN NEW.kind IN ('usage', 'childUsage') BEGIN"
        f" INSERT INTO session_usage (session_id, {_USAGE_COLUMNS})"
        f" VALUES (NEW.session_id, {added}, json_extract(NEW.payload, '$.costUsd'))"
        f" ON CONFLICT (session_id) DO UPDATE SET {summed}, cost_usd = CASE WHEN excluded.cost_usd IS NULL"
        " THEN cost_usd ELSE ifnull(cost_usd, 0) + excluded.cost_usd END; END"
    )
    totals = ", ".join(f"total(json_extract(payload, '$.{f}'))" for f in _USAGE)
    conn.execute(
        f"INSERT INTO session_usage (session_id, {_USAGE_COLUMNS}) SELECT session_id, {totals},"
        " sum(json_extract(payload, '$.costUsd')) FROM events WHERE kind IN ('usage', 'childUsage')"
        " GROUP BY session_id"
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None] | str] = [
    V1,
    V2,
    V3,
    V4,
    V5_TOOL_STATUS,
    V6_FILE_CHECKPOINTS,
    V7_SESSION_MODEL,
    V8_CALIBRATIONS,
    V9_VIEW_RESUME,
    V10_VIEW_SNAPSHOTS,
    V11_CHILD_SESSIONS,
    V12_VIEW_SNAPSHOTS_NAME,
    v13_session_usage,
]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database to ``SCHEMA_VERSION``; returns the version it started from."""
    start = conn.execute("PRAGMA user_version").fetchone()[0]
    if start > SCHEMA_VERSION:
        raise StorageFailure(
            f"the database has schema version {start}, newer than this Threadline ({SCHEMA_VERSION}); upgrade Threadline"
        )
    for version in range(start + 1, SCHEMA_VERSION + 1):
        step = MIGRATIONS[version - 1]
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] >= version:
                conn.execute("COMMIT")  # another process (a second server on the same home) applied it first
                continue
            if isinstance(step, str):
                for statement in _statements(step):
                    conn.execute(statement)
            else:
                step(conn)
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return int(start)


def _statements(script: str) -> list[str]:
    """Split a script on ';' at line ends (our scripts hold no ';' inside literals)."""
    return [s.strip() for s in script.split(";\n") if s.strip().rstrip(";")]
