-- gpupool store schema, version 1 (PostgreSQL). JSON values are stored as text, verbatim, so that
-- key order survives round trips. Text columns use the "C" collation so that ordering matches
-- SQLite (byte order).

-- Live configs: one row per existing (kind, name). Deleting a config deletes its row here only.
CREATE TABLE configs (
  kind TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  body TEXT COLLATE "C" NOT NULL,
  revision BIGINT NOT NULL,
  updated_by TEXT COLLATE "C" NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (kind, name)
);

-- The last revision number ever given to (kind, name). Never deleted, so revisions are not reused
-- after a delete; bumping it row-locks the config for the rest of the transaction.
CREATE TABLE config_heads (
  kind TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  last_revision BIGINT NOT NULL,
  PRIMARY KEY (kind, name)
);

-- Every change, with the full body after it (NULL for a delete). seq is the global write order.
CREATE TABLE config_revisions (
  seq BIGSERIAL PRIMARY KEY,
  kind TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  revision BIGINT NOT NULL,
  action TEXT COLLATE "C" NOT NULL,
  author TEXT COLLATE "C" NOT NULL,
  source TEXT COLLATE "C" NOT NULL,
  created_at_ms BIGINT NOT NULL,
  description TEXT COLLATE "C" NOT NULL,
  body TEXT,
  UNIQUE (kind, name, revision)
);

CREATE TABLE nodes (
  name TEXT COLLATE "C" PRIMARY KEY,
  object TEXT COLLATE "C" NOT NULL
);

CREATE TABLE workflows (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL,
  pool TEXT COLLATE "C" NOT NULL,
  user_name TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  finished BIGINT NOT NULL,
  submitted_ms BIGINT NOT NULL,
  spec TEXT COLLATE "C" NOT NULL,
  version BIGINT NOT NULL,
  idempotency_key TEXT COLLATE "C" UNIQUE  -- NULL when none
);
CREATE INDEX workflows_by_submission ON workflows (submitted_ms, id);
CREATE INDEX workflows_unfinished ON workflows (finished, submitted_ms, id);

CREATE TABLE tasks (
  workflow_id TEXT COLLATE "C" NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  position BIGINT NOT NULL,
  group_name TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  node TEXT COLLATE "C" NOT NULL,
  pod TEXT COLLATE "C" NOT NULL,
  retry BIGINT NOT NULL,
  status_changed_ms BIGINT NOT NULL,
  started_ms BIGINT NOT NULL,
  finished_ms BIGINT NOT NULL,
  exit_code BIGINT NOT NULL,
  message TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (workflow_id, position)
);

CREATE TABLE audit_log (
  id BIGSERIAL PRIMARY KEY,
  at_ms BIGINT NOT NULL,
  user_name TEXT COLLATE "C" NOT NULL,
  source TEXT COLLATE "C" NOT NULL,
  action TEXT COLLATE "C" NOT NULL,
  target TEXT COLLATE "C" NOT NULL,
  detail TEXT COLLATE "C" NOT NULL
);

CREATE TABLE leases (
  name TEXT COLLATE "C" PRIMARY KEY,
  holder TEXT COLLATE "C" NOT NULL,
  expires_ms BIGINT NOT NULL
);

CREATE TABLE sequences (
  name TEXT COLLATE "C" PRIMARY KEY,
  value BIGINT NOT NULL
);
