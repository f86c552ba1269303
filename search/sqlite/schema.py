"""DDL of the SQLite store: memories, their FTS5 index kept in sync by triggers, relations, audit,
and knowledge (document sources and their chunks, with their own FTS5 index)."""

from __future__ import annotations

SCHEMA_VERSION = "2"

# The FTS5 table is external-content: it indexes `memories` without holding a second copy of
# the text, and the three triggers keep it in step (the sqlite-utils `enable_fts` pattern).
# Porter stemming lets "deploying" match "deployment"; remove_diacritics folds accents.
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS memories (
    -- AUTOINCREMENT: a rowid is never reused, so the vector cache can key on it.
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    content_hash TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    importance REAL NOT NULL,
    source TEXT NOT NULL,
    related_files TEXT NOT NULL DEFAULT '[]',
    state TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_accessed_at TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    valid_from TEXT,
    valid_to TEXT,
    details TEXT NOT NULL DEFAULT '{}',
    embedding BLOB,
    embedding_model TEXT NOT NULL DEFAULT '',
    vec_version INTEGER NOT NULL DEFAULT 0,
    thread TEXT NOT NULL DEFAULT '',
    verified_at TEXT
);

-- One memory per content in a scope: the last line of defence of exact-duplicate resolution
-- when two processes write the same fact at the same moment.
CREATE UNIQUE INDEX IF NOT EXISTS memories_scope_hash ON memories(scope, content_hash);
-- Its type too, so that counting a scope's memories by type and state (status, the dashboard's
-- scopes) reads the index alone, not every row (0.26 s at 100k memories, 0.01 s with it).
DROP INDEX IF EXISTS memories_scope_state;
CREATE INDEX IF NOT EXISTS memories_scope_state_type ON memories(scope, state, memory_type);
CREATE INDEX IF NOT EXISTS memories_created_at ON memories(created_at);

CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    title, content, tags,
    content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, title, content, tags) VALUES (new.rowid, new.title, new.content, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
        VALUES ('delete', old.rowid, old.title, old.content, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF title, content, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
        VALUES ('delete', old.rowid, old.title, old.content, old.tags);
    INSERT INTO memories_fts(rowid, title, content, tags) VALUES (new.rowid, new.title, new.content, new.tags);
END;

-- vec_version and its trigger told the vector cache of older releases that a row changed; the
-- change log below does that now, so the trigger goes (one UPDATE less on every embedding write).
DROP TRIGGER IF EXISTS memories_vec;

-- The change log of what the in-memory index (search.sqlite.memory_index) holds: a row is logged
-- when it is inserted, deleted, or has a field the index searches or filters on rewritten. Each
-- process applies the rows logged since it last looked; old entries are pruned by the writer.
CREATE TABLE IF NOT EXISTS vector_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    row INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS memories_vc_ai AFTER INSERT ON memories BEGIN
    INSERT INTO vector_changes(row) VALUES (new.rowid);
END;
CREATE TRIGGER IF NOT EXISTS memories_vc_ad AFTER DELETE ON memories BEGIN
    INSERT INTO vector_changes(row) VALUES (old.rowid);
END;
CREATE TRIGGER IF NOT EXISTS memories_vc_au
    AFTER UPDATE OF id, scope, state, memory_type, title, content, tags, created_at, embedding ON memories BEGIN
    INSERT INTO vector_changes(row) VALUES (new.rowid);
END;

CREATE TABLE IF NOT EXISTS relations (
    source_id TEXT NOT NULL,
    target_id TEXT NOT NULL,
    type TEXT NOT NULL,
    strength REAL NOT NULL,
    author TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source_id, target_id, type)
);
CREATE INDEX IF NOT EXISTS relations_target ON relations(target_id);

CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    action TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    author TEXT NOT NULL,
    detail TEXT NOT NULL,
    at TEXT NOT NULL
);
"""

# The team server's tokens: a keyed hash of each token (never the token), its principal and grants.
TOKEN_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    grants TEXT NOT NULL,
    digest TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT,
    created_by TEXT NOT NULL DEFAULT ''
);
"""

# Knowledge: one row per indexed document (scope, uri) and its chunks. Chunks are replaced as a
# set in one transaction, so a search sees a document's old chunks or its new ones, never a mix.
# knowledge_version in meta (absent: 0) counts knowledge writes: readers' vector caches reload when it moves.
KNOWLEDGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS knowledge_sources (
    scope TEXT NOT NULL,
    uri TEXT NOT NULL,
    title TEXT NOT NULL,
    format TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    fetched_at TEXT NOT NULL,
    indexed_at TEXT,
    chunk_count INTEGER NOT NULL,
    last_error TEXT,
    PRIMARY KEY (scope, uri)
);

CREATE TABLE IF NOT EXISTS knowledge_chunks (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    uri TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    title TEXT NOT NULL,
    section TEXT NOT NULL DEFAULT '[]',
    page INTEGER,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS knowledge_chunks_source ON knowledge_chunks(scope, uri, ordinal);

CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5(
    title, section, text,
    content='knowledge_chunks', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS knowledge_ai AFTER INSERT ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts(rowid, title, section, text) VALUES (new.rowid, new.title, new.section, new.text);
END;
CREATE TRIGGER IF NOT EXISTS knowledge_ad AFTER DELETE ON knowledge_chunks BEGIN
    INSERT INTO knowledge_fts(knowledge_fts, rowid, title, section, text)
        VALUES ('delete', old.rowid, old.title, old.section, old.text);
END;
"""

MEMORY_COLUMNS = (
    "id, scope, title, content, tags, content_hash, memory_type, importance, source, related_files, "
    "state, author, created_at, updated_at, last_accessed_at, access_count, valid_from, valid_to, "
    "details, embedding, embedding_model, thread, verified_at"
)
# The same row without its vector (read as NULL), for readers that need none.
MEMORY_COLUMNS_WITHOUT_VECTOR = MEMORY_COLUMNS.replace(", embedding,", ", NULL AS embedding,")

# Columns added to tables after they were first released: (table, column, type and default).
# A database written before gets them on open (search.sqlite.database), with the default for old rows.
ADDED_COLUMNS = (
    ("relations", "description", "TEXT NOT NULL DEFAULT ''"),
    ("memories", "thread", "TEXT NOT NULL DEFAULT ''"),
    ("memories", "verified_at", "TEXT"),
)

# Indexes on added columns: created once the columns exist (after ADDED_COLUMNS).
ADDED_INDEXES = (
    # A memory's neighbours in its thread, in order; only memories that belong to a thread.
    "CREATE INDEX IF NOT EXISTS memories_thread ON memories(scope, thread, created_at, id) WHERE thread != ''",
    # Which of recall's candidates belong to a thread, answered from the index alone: through the id
    # index a lookup read each candidate's row, 100 random pages a recall (5 ms at 1M memories).
    "CREATE INDEX IF NOT EXISTS memories_thread_members ON memories(id, scope, thread, created_at) WHERE thread != ''",
    # A memory's audit trail (undo checks it) without reading the whole log.
    "CREATE INDEX IF NOT EXISTS audit_memory ON audit(memory_id, seq)",
)
