-- A store-wide counter bumped by every node write transaction (UpsertNodes, DeleteNodes). Readers
-- poll it to know whether their cached nodes are stale.
CREATE TABLE node_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  value BIGINT NOT NULL
);
INSERT INTO node_generation (id, value) VALUES (1, 0);
