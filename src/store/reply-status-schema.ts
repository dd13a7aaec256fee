/**
 * Migration 15: the reply status `rejected` (docs/architecture.md, "The reply format"; the agent
 * declines the task, A2A v1.0 §4.1.3 TaskState, TASK_STATE_REJECTED) admitted by the CHECK
 * constraints of `turns.reply_status` and `replies.kind`, which migrations 6 and 7 wrote with the
 * four words before it.
 *
 * SQLite changes a CHECK constraint only by rebuilding the table (https://sqlite.org/lang_altertable.html,
 * "Making Other Kinds Of Table Schema Changes": the connection runs in defensive mode, so the
 * `writable_schema` shortcut is refused). Each table is created anew with the same columns in the
 * same order, its rows copied, the old table dropped (its triggers go with it, before the implicit
 * DELETE of a DROP, so none fires: https://sqlite.org/lang_droptable.html), the new one renamed, and
 * the indexes and triggers the old one had (migrations 6, 7, 9, 11 and 14) created again as they
 * were. Nothing references either table, so no foreign key is rewritten; `turns` still references
 * `tasks`. The copies keep every count the triggers hold (no trigger exists on the new tables while
 * they are filled). Cost: one copy of both tables, inside the migration's transaction, once, at the
 * first start of a bridge of this version: 3.2–4.0 s for a store of 100,000 finished tasks
 * (483 MiB), against 2.6–4.1 s for a `VACUUM INTO` copy of the same file in the same runs (a
 * 2-CPU machine at load average 5).
 */
export const REPLY_STATUS_MIGRATION = `
  CREATE TABLE turns_v15 (
    task_id         TEXT NOT NULL REFERENCES tasks(id),
    turn            INTEGER NOT NULL,
    ask             TEXT NOT NULL,
    reply_token     TEXT,
    deadline_at     INTEGER NOT NULL,
    dispatch_id     TEXT NOT NULL UNIQUE,
    envelope        BLOB NOT NULL,
    dispatch_state  TEXT NOT NULL CHECK (dispatch_state IN ('pending','accepted','failed','canceled')),
    next_attempt_at INTEGER,
    accepted_at     INTEGER,
    reply_status    TEXT CHECK (reply_status IN ('done','input-required','failed','rejected','working')),
    reply_text      TEXT,
    reply_ledger_id INTEGER,
    replied_at      INTEGER,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (task_id, turn)
  ) STRICT;
  INSERT INTO turns_v15 (task_id, turn, ask, reply_token, deadline_at, dispatch_id, envelope, dispatch_state,
      next_attempt_at, accepted_at, reply_status, reply_text, reply_ledger_id, replied_at, created_at)
    SELECT task_id, turn, ask, reply_token, deadline_at, dispatch_id, envelope, dispatch_state,
      next_attempt_at, accepted_at, reply_status, reply_text, reply_ledger_id, replied_at, created_at FROM turns;

  CREATE TABLE replies_v15 (
    ledger_id     INTEGER PRIMARY KEY,
    task_id       TEXT NOT NULL,
    turn          INTEGER NOT NULL,
    agent         TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('done','input-required','failed','rejected','working','late')),
    nonce         TEXT NOT NULL,
    text          TEXT NOT NULL,
    omitted_lines INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    text_value    INTEGER,
    text_deflate  BLOB
  ) STRICT;
  INSERT INTO replies_v15 (ledger_id, task_id, turn, agent, kind, nonce, text, omitted_lines, created_at, text_value, text_deflate)
    SELECT ledger_id, task_id, turn, agent, kind, nonce, text, omitted_lines, created_at, text_value, text_deflate FROM replies;

  DROP TABLE turns;
  DROP TABLE replies;
  ALTER TABLE turns_v15 RENAME TO turns;
  ALTER TABLE replies_v15 RENAME TO replies;

  CREATE INDEX turns_pending ON turns(dispatch_state, next_attempt_at);
  CREATE INDEX replies_by_task ON replies(task_id, ledger_id);
  CREATE INDEX replies_by_text_value ON replies(text_value) WHERE text_value IS NOT NULL;

  CREATE TRIGGER dispatch_counts_insert AFTER INSERT ON turns BEGIN
    INSERT INTO dispatch_counts (state, n) VALUES (new.dispatch_state, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER dispatch_counts_delete AFTER DELETE ON turns BEGIN
    UPDATE dispatch_counts SET n = n - 1 WHERE state = old.dispatch_state;
  END;
  CREATE TRIGGER dispatch_counts_update AFTER UPDATE OF dispatch_state ON turns WHEN old.dispatch_state IS NOT new.dispatch_state BEGIN
    UPDATE dispatch_counts SET n = n - 1 WHERE state = old.dispatch_state;
    INSERT INTO dispatch_counts (state, n) VALUES (new.dispatch_state, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER task_rows_turns_insert AFTER INSERT ON turns BEGIN UPDATE tasks SET n_turns = n_turns + 1 WHERE id = new.task_id; END;
  CREATE TRIGGER task_rows_turns_delete AFTER DELETE ON turns BEGIN UPDATE tasks SET n_turns = n_turns - 1 WHERE id = old.task_id; END;

  CREATE TRIGGER replies_drop_text_value AFTER DELETE ON replies WHEN OLD.text_value IS NOT NULL BEGIN
    DELETE FROM large_value_chunks WHERE value_id = OLD.text_value;
    DELETE FROM large_values WHERE id = OLD.text_value;
  END;
  CREATE TRIGGER row_counts_replies_insert AFTER INSERT ON replies BEGIN UPDATE row_counts SET n = n + 1 WHERE name = 'replies'; END;
  CREATE TRIGGER row_counts_replies_delete AFTER DELETE ON replies BEGIN UPDATE row_counts SET n = n - 1 WHERE name = 'replies'; END;
  CREATE TRIGGER task_rows_replies_insert AFTER INSERT ON replies BEGIN UPDATE tasks SET n_replies = n_replies + 1 WHERE id = new.task_id; END;
  CREATE TRIGGER task_rows_replies_delete AFTER DELETE ON replies BEGIN UPDATE tasks SET n_replies = n_replies - 1 WHERE id = old.task_id; END;
`;
