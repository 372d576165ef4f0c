-- gpupool store schema, version 1 (SQLite). JSON values are stored as text, verbatim, so that key
-- order survives round trips.

-- Live configs: one row per existing (kind, name). Deleting a config deletes its row here only.
CREATE TABLE configs (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  body TEXT NOT NULL,
  revision INTEGER NOT NULL,
  updated_by TEXT NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  PRIMARY KEY (kind, name)
);

-- The last revision number ever given to (kind, name). Never deleted, so revisions are not reused
-- after a delete; bumping it row-locks the config for the rest of the transaction.
CREATE TABLE config_heads (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  last_revision INTEGER NOT NULL,
  PRIMARY KEY (kind, name)
);

-- Every change, with the full body after it (NULL for a delete). seq is the global write order.
CREATE TABLE config_revisions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  revision INTEGER NOT NULL,
  action TEXT NOT NULL,
  author TEXT NOT NULL,
  source TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  description TEXT NOT NULL,
  body TEXT,
  UNIQUE (kind, name, revision)
);

CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  object TEXT NOT NULL
);

CREATE TABLE workflows (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  pool TEXT NOT NULL,
  user_name TEXT NOT NULL,
  status TEXT NOT NULL,
  finished INTEGER NOT NULL,
  submitted_ms INTEGER NOT NULL,
  spec TEXT NOT NULL,
  version INTEGER NOT NULL,
  idempotency_key TEXT UNIQUE  -- NULL when none
);
CREATE INDEX workflows_by_submission ON workflows (submitted_ms, id);
CREATE INDEX workflows_unfinished ON workflows (finished, submitted_ms, id);

CREATE TABLE tasks (
  workflow_id TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  group_name TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  node TEXT NOT NULL,
  pod TEXT NOT NULL,
  retry INTEGER NOT NULL,
  status_changed_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  exit_code INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (workflow_id, position)
);

CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms INTEGER NOT NULL,
  user_name TEXT NOT NULL,
  source TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  detail TEXT NOT NULL
);

CREATE TABLE leases (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  expires_ms INTEGER NOT NULL
);

CREATE TABLE sequences (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
