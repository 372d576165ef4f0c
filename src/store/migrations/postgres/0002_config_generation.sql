-- A store-wide counter bumped by every config write transaction. Readers poll it to know whether
-- any config changed; writers update it first, which also serialises config writes.
CREATE TABLE config_generation (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  value BIGINT NOT NULL
);
INSERT INTO config_generation (id, value) VALUES (1, (SELECT COUNT(*) FROM config_revisions));
