import { COMPACT_MIGRATION } from './compact.js';
import { LARGE_VALUES_MIGRATION } from './large-values.js';
import { NOT_OURS_MIGRATION } from './mailbox-state.js';
import { POLL_BOUNDS_MIGRATION } from './messages.js';
import { TASK_ROWS_MIGRATION } from './prune.js';
import { REPLY_STATUS_MIGRATION } from './reply-status-schema.js';
import { TURN_LEDGER_MIGRATION } from './turn-ledger.js';

/**
 * Versioned schema migrations. Each entry runs once, in order, inside one transaction, and bumps `PRAGMA user_version` to its
 * index + 1. Never edit a shipped entry; append a new one. Times are integers in ms since the Unix epoch (UTC). States are the
 * A2A v1.0 TaskState names without the `TASK_STATE_` prefix.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE tasks (
    id            TEXT PRIMARY KEY,
    agent         TEXT NOT NULL,
    context_id    TEXT NOT NULL,
    state         TEXT NOT NULL,
    state_reason  TEXT,
    failed_by     TEXT,
    turn          INTEGER NOT NULL,
    caller        TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    deadline_at   INTEGER
  ) STRICT;
  CREATE INDEX tasks_by_context ON tasks(agent, context_id, created_at);
  CREATE INDEX tasks_by_state ON tasks(state, deadline_at);
  CREATE INDEX tasks_by_updated ON tasks(agent, updated_at);

  CREATE TABLE turns (
    task_id         TEXT NOT NULL REFERENCES tasks(id),
    turn            INTEGER NOT NULL,
    ask             TEXT NOT NULL,
    reply_token     TEXT,
    deadline_at     INTEGER NOT NULL,
    dispatch_id     TEXT NOT NULL UNIQUE,
    envelope        BLOB NOT NULL,
    dispatch_state  TEXT NOT NULL,
    next_attempt_at INTEGER,
    accepted_at     INTEGER,
    reply_status    TEXT,
    reply_text      TEXT,
    reply_ledger_id INTEGER,
    replied_at      INTEGER,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (task_id, turn)
  ) STRICT;
  CREATE INDEX turns_pending ON turns(dispatch_state, next_attempt_at);

  CREATE TABLE dispatch_attempts (
    id           INTEGER PRIMARY KEY,
    dispatch_id  TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    turn         INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    outcome      TEXT,
    http_status  INTEGER,
    error        TEXT,
    UNIQUE (dispatch_id, attempt)
  ) STRICT;

  CREATE TABLE messages (
    seq            INTEGER PRIMARY KEY,
    agent          TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    task_id        TEXT NOT NULL,
    context_id     TEXT NOT NULL,
    role           TEXT NOT NULL,
    kind           TEXT NOT NULL,
    turn           INTEGER NOT NULL,
    text           TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    UNIQUE (agent, message_id)
  ) STRICT;
  CREATE INDEX messages_by_task ON messages(task_id, seq);

  CREATE TABLE artifacts (
    artifact_id  TEXT PRIMARY KEY,
    task_id      TEXT NOT NULL,
    turn         INTEGER NOT NULL,
    name         TEXT NOT NULL,
    text         TEXT NOT NULL,
    ledger_id    INTEGER,
    created_at   INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX artifacts_by_task ON artifacts(task_id, created_at);

  CREATE TABLE ledger (
    id           INTEGER PRIMARY KEY,
    source       TEXT NOT NULL UNIQUE,
    seen_at      INTEGER NOT NULL,
    message_id   TEXT,
    from_header  TEXT,
    subject      TEXT,
    date_header  TEXT,
    size         INTEGER NOT NULL,
    raw_sha256   TEXT NOT NULL,
    raw          BLOB,
    agent        TEXT,
    task_id      TEXT,
    verdict      TEXT NOT NULL,
    reason       TEXT NOT NULL
  ) STRICT;
  CREATE INDEX ledger_by_sha ON ledger(raw_sha256);
  CREATE INDEX ledger_by_task ON ledger(task_id, message_id);
  CREATE INDEX ledger_by_verdict ON ledger(verdict, seen_at);

  CREATE TABLE mailbox_state (
    folder          TEXT PRIMARY KEY,
    uid_validity    TEXT,
    last_uid        INTEGER NOT NULL DEFAULT 0,
    last_check_at   INTEGER,
    last_result     TEXT,
    last_error      TEXT,
    error_since     INTEGER,
    last_success_at INTEGER
  ) STRICT;

  CREATE TABLE task_events (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL,
    at          INTEGER NOT NULL,
    from_state  TEXT,
    to_state    TEXT NOT NULL,
    cause       TEXT NOT NULL
  ) STRICT;
  CREATE INDEX task_events_by_task ON task_events(task_id, id);

  CREATE TABLE audit (
    task_id     TEXT PRIMARY KEY,
    state       TEXT NOT NULL,
    written_at  INTEGER NOT NULL,
    entry       TEXT NOT NULL
  ) STRICT;
  `,
  // 2: an operator's `retry` may reopen a task that failed by dispatch, so a task can reach a
  // terminal state more than once; each arrival writes one audit entry, numbered by `seq`.
  `
  CREATE TABLE audit_v2 (
    task_id     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    state       TEXT NOT NULL,
    written_at  INTEGER NOT NULL,
    entry       TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
  ) STRICT;
  INSERT INTO audit_v2 (task_id, seq, state, written_at, entry) SELECT task_id, 1, state, written_at, entry FROM audit;
  DROP TABLE audit;
  ALTER TABLE audit_v2 RENAME TO audit;
  `,
  // 3: when the mailbox received each message (IMAP INTERNALDATE, Maildir mtime), so `show`
  // can tell mail delivery from polling latency.
  `
  ALTER TABLE ledger ADD COLUMN received_at INTEGER;
  `,
  // 4: a task's history without its polls, read on every view (a task polled 10,000 times made
  // GetTask walk every poll: bench/RESULTS.md).
  `
  CREATE INDEX messages_history ON messages(task_id, seq) WHERE kind != 'poll';
  `,
  // 5: when a caller was first shown a task's terminal state; until then any message on its
  // context is answered with that result rather than starting new work.
  `
  ALTER TABLE tasks ADD COLUMN outcome_shown_at INTEGER;
  `,
  // 6: the states of both state machines (src/store/task-state.ts, src/store/dispatch-state.ts)
  // held by the schema: CHECK constraints on tasks, turns and task_events, which SQLite adds only
  // by rebuilding a table. turns references tasks, so turns is rebuilt first against the new tasks
  // table, both old tables are dropped (the child first), and the new ones renamed: RENAME
  // rewrites the reference (https://sqlite.org/lang_altertable.html).
  `
  CREATE TABLE tasks_v6 (
    id               TEXT PRIMARY KEY,
    agent            TEXT NOT NULL,
    context_id       TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('SUBMITTED','WORKING','INPUT_REQUIRED','COMPLETED','FAILED','CANCELED','REJECTED')),
    state_reason     TEXT,
    failed_by        TEXT CHECK (failed_by IN ('deadline','dispatch','agent')),
    turn             INTEGER NOT NULL,
    caller           TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    deadline_at      INTEGER,
    outcome_shown_at INTEGER,
    CHECK (failed_by IS NULL OR state = 'FAILED')
  ) STRICT;
  INSERT INTO tasks_v6 (id, agent, context_id, state, state_reason, failed_by, turn, caller, created_at, updated_at, deadline_at, outcome_shown_at)
    SELECT id, agent, context_id, state, state_reason, failed_by, turn, caller, created_at, updated_at, deadline_at, outcome_shown_at FROM tasks;

  CREATE TABLE turns_v6 (
    task_id         TEXT NOT NULL REFERENCES tasks_v6(id),
    turn            INTEGER NOT NULL,
    ask             TEXT NOT NULL,
    reply_token     TEXT,
    deadline_at     INTEGER NOT NULL,
    dispatch_id     TEXT NOT NULL UNIQUE,
    envelope        BLOB NOT NULL,
    dispatch_state  TEXT NOT NULL CHECK (dispatch_state IN ('pending','accepted','failed','canceled')),
    next_attempt_at INTEGER,
    accepted_at     INTEGER,
    reply_status    TEXT CHECK (reply_status IN ('done','input-required','failed','working')),
    reply_text      TEXT,
    reply_ledger_id INTEGER,
    replied_at      INTEGER,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (task_id, turn)
  ) STRICT;
  INSERT INTO turns_v6 SELECT task_id, turn, ask, reply_token, deadline_at, dispatch_id, envelope, dispatch_state,
    next_attempt_at, accepted_at, reply_status, reply_text, reply_ledger_id, replied_at, created_at FROM turns;

  CREATE TABLE task_events_v6 (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL,
    at          INTEGER NOT NULL,
    from_state  TEXT CHECK (from_state IN ('SUBMITTED','WORKING','INPUT_REQUIRED','COMPLETED','FAILED','CANCELED','REJECTED')),
    to_state    TEXT NOT NULL CHECK (to_state IN ('SUBMITTED','WORKING','INPUT_REQUIRED','COMPLETED','FAILED','CANCELED','REJECTED')),
    cause       TEXT NOT NULL
  ) STRICT;
  INSERT INTO task_events_v6 SELECT id, task_id, at, from_state, to_state, cause FROM task_events;

  DROP TABLE turns;
  DROP TABLE tasks;
  DROP TABLE task_events;
  ALTER TABLE tasks_v6 RENAME TO tasks;
  ALTER TABLE turns_v6 RENAME TO turns;
  ALTER TABLE task_events_v6 RENAME TO task_events;
  CREATE INDEX tasks_by_context ON tasks(agent, context_id, created_at);
  CREATE INDEX tasks_by_state ON tasks(state, deadline_at);
  CREATE INDEX tasks_by_updated ON tasks(agent, updated_at);
  CREATE INDEX turns_pending ON turns(dispatch_state, next_attempt_at);
  CREATE INDEX task_events_by_task ON task_events(task_id, id);
  `,
  // 7: the agent's replies as their own rows (src/store/replies.ts), so every view fences the same
  // text with the same nonce (docs/agent-text.md), and their attachments stored once. A history
  // message of an agent reply points at its reply by ledger id.
  `
  CREATE TABLE replies (
    ledger_id     INTEGER PRIMARY KEY,
    task_id       TEXT NOT NULL,
    turn          INTEGER NOT NULL,
    agent         TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('done','input-required','failed','working','late')),
    nonce         TEXT NOT NULL,
    text          TEXT NOT NULL,
    omitted_lines INTEGER NOT NULL,
    created_at    INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX replies_by_task ON replies(task_id, ledger_id);

  CREATE TABLE reply_attachments (
    ledger_id   INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    task_id     TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('file','data','refused')),
    filename    TEXT,
    media_type  TEXT NOT NULL,
    size        INTEGER NOT NULL,
    bytes       BLOB,
    data        TEXT,
    reason      TEXT,
    PRIMARY KEY (ledger_id, seq)
  ) STRICT;
  CREATE INDEX reply_attachments_by_task ON reply_attachments(task_id, ledger_id, seq);

  ALTER TABLE messages ADD COLUMN ledger_id INTEGER;
  `,
  // 8: the DKIM signature (its b= value, decoded and encoded again) that authenticated a mail, so
  // a replay of it is recognised by signature and Message-ID from its header block alone (gate 1,
  // docs/architecture.md "The gates"), before its body is fetched.
  `
  ALTER TABLE ledger ADD COLUMN dkim_b TEXT;
  CREATE INDEX ledger_by_signature ON ledger(dkim_b, message_id) WHERE dkim_b IS NOT NULL;
  `,
  // 9: large values (a large raw message, a long answer) written in chunks before the decision
  // that refers to them, so no recording transaction writes megabytes (src/store/large-values.ts).
  LARGE_VALUES_MIGRATION,
  // 10: push notifications (A2A v1.0 §3.1.7–3.1.10, §4.3): the callers' configurations per task, and
  // one delivery per configuration and task change, written in the transaction of the change
  // (src/store/push.ts), so a crash loses none and each is POSTed in order.
  `
  CREATE TABLE push_configs (
    task_id          TEXT NOT NULL,
    id               TEXT NOT NULL,
    dialect          TEXT NOT NULL CHECK (dialect IN ('1.0','0.3')),
    url              TEXT NOT NULL,
    token            TEXT,
    auth_scheme      TEXT,
    auth_credentials TEXT,
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (task_id, id)
  ) STRICT;

  CREATE TABLE push_deliveries (
    seq             INTEGER PRIMARY KEY,
    task_id         TEXT NOT NULL,
    config_id       TEXT NOT NULL,
    task_state      TEXT NOT NULL CHECK (task_state IN ('SUBMITTED','WORKING','INPUT_REQUIRED','COMPLETED','FAILED','CANCELED','REJECTED')),
    changed_at      INTEGER NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending','delivered','failed','dropped')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    http_status     INTEGER,
    error           TEXT,
    finished_at     INTEGER
  ) STRICT;
  CREATE INDEX push_deliveries_due ON push_deliveries(state, next_attempt_at);
  CREATE INDEX push_deliveries_by_config ON push_deliveries(task_id, config_id, seq);
  `,
  // 11: reads whose cost does not grow with the store (bench/RESULTS.md, million). Counts kept by triggers in the transaction of every
  // write — tasks per agent and state (/health, /metrics, status, ListTasks totals), dispatches per state, ledger rows per verdict —
  // instead of a scan of the table at every call, and the rows of the tables a task's rows live in (prune --dry-run); and the indexes of
  // the reads that scanned: the CLI's `tasks` across agents and by state, newest first (tasks_by_time, tasks_by_state_time: also prune's
  // finished tasks), `show`'s attempts of a task, start-up's attempts left unfinished, and prune's events and mail after its cut.
  `
  CREATE TABLE task_counts (agent TEXT NOT NULL, state TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (agent, state)) STRICT, WITHOUT ROWID;
  INSERT INTO task_counts (agent, state, n) SELECT agent, state, count(*) FROM tasks GROUP BY agent, state;
  CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_counts (agent, state, n) VALUES (new.agent, new.state, 1) ON CONFLICT (agent, state) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks BEGIN
    UPDATE task_counts SET n = n - 1 WHERE agent = old.agent AND state = old.state;
  END;
  CREATE TRIGGER task_counts_update AFTER UPDATE OF agent, state ON tasks WHEN old.agent IS NOT new.agent OR old.state IS NOT new.state BEGIN
    UPDATE task_counts SET n = n - 1 WHERE agent = old.agent AND state = old.state;
    INSERT INTO task_counts (agent, state, n) VALUES (new.agent, new.state, 1) ON CONFLICT (agent, state) DO UPDATE SET n = n + 1;
  END;

  CREATE TABLE dispatch_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  INSERT INTO dispatch_counts (state, n) SELECT dispatch_state, count(*) FROM turns GROUP BY dispatch_state;
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

  CREATE TABLE verdict_counts (verdict TEXT PRIMARY KEY, n INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  INSERT INTO verdict_counts (verdict, n) SELECT verdict, count(*) FROM ledger GROUP BY verdict;
  CREATE TRIGGER verdict_counts_insert AFTER INSERT ON ledger BEGIN
    INSERT INTO verdict_counts (verdict, n) VALUES (new.verdict, 1) ON CONFLICT (verdict) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER verdict_counts_delete AFTER DELETE ON ledger BEGIN
    UPDATE verdict_counts SET n = n - 1 WHERE verdict = old.verdict;
  END;
  CREATE TRIGGER verdict_counts_update AFTER UPDATE OF verdict ON ledger WHEN old.verdict IS NOT new.verdict BEGIN
    UPDATE verdict_counts SET n = n - 1 WHERE verdict = old.verdict;
    INSERT INTO verdict_counts (verdict, n) VALUES (new.verdict, 1) ON CONFLICT (verdict) DO UPDATE SET n = n + 1;
  END;

  CREATE TABLE row_counts (name TEXT PRIMARY KEY, n INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  INSERT INTO row_counts (name, n) VALUES
    ('dispatch_attempts', (SELECT count(*) FROM dispatch_attempts)), ('messages', (SELECT count(*) FROM messages)),
    ('artifacts', (SELECT count(*) FROM artifacts)), ('task_events', (SELECT count(*) FROM task_events)),
    ('replies', (SELECT count(*) FROM replies)), ('reply_attachments', (SELECT count(*) FROM reply_attachments));
  CREATE TRIGGER row_counts_attempts_insert AFTER INSERT ON dispatch_attempts BEGIN UPDATE row_counts SET n = n + 1 WHERE name = 'dispatch_attempts'; END;
  CREATE TRIGGER row_counts_attempts_delete AFTER DELETE ON dispatch_attempts BEGIN UPDATE row_counts SET n = n - 1 WHERE name = 'dispatch_attempts'; END;
  CREATE TRIGGER row_counts_messages_insert AFTER INSERT ON messages BEGIN UPDATE row_counts SET n = n + 1 WHERE name = 'messages'; END;
  CREATE TRIGGER row_counts_messages_delete AFTER DELETE ON messages BEGIN UPDATE row_counts SET n = n - 1 WHERE name = 'messages'; END;
  CREATE TRIGGER row_counts_artifacts_insert AFTER INSERT ON artifacts BEGIN UPDATE row_counts SET n = n + 1 WHERE name = 'artifacts'; END;
  CREATE TRIGGER row_counts_artifacts_delete AFTER DELETE ON artifacts BEGIN UPDATE row_counts SET n = n - 1 WHERE name = 'artifacts'; END;
  CREATE TRIGGER row_counts_events_insert AFTER INSERT ON task_events BEGIN UPDATE row_counts SET n = n + 1 WHERE name = 'task_events'; END;
  CREATE TRIGGER row_counts_events_delete AFTER DELETE ON task_events BEGIN UPDATE row_counts SET n = n - 1 WHERE name = 'task_events'; END;
  CREATE TRIGGER row_counts_replies_insert AFTER INSERT ON replies BEGIN UPDATE row_counts SET n = n + 1 WHERE name = 'replies'; END;
  CREATE TRIGGER row_counts_replies_delete AFTER DELETE ON replies BEGIN UPDATE row_counts SET n = n - 1 WHERE name = 'replies'; END;
  CREATE TRIGGER row_counts_attachments_insert AFTER INSERT ON reply_attachments BEGIN UPDATE row_counts SET n = n + 1 WHERE name = 'reply_attachments'; END;
  CREATE TRIGGER row_counts_attachments_delete AFTER DELETE ON reply_attachments BEGIN UPDATE row_counts SET n = n - 1 WHERE name = 'reply_attachments'; END;

  CREATE INDEX tasks_by_time ON tasks(updated_at, id);
  CREATE INDEX tasks_by_state_time ON tasks(state, updated_at);
  CREATE INDEX attempts_by_task ON dispatch_attempts(task_id);
  CREATE INDEX attempts_unfinished ON dispatch_attempts(dispatch_id) WHERE finished_at IS NULL;
  CREATE INDEX task_events_by_time ON task_events(at);
  CREATE INDEX ledger_by_time ON ledger(seen_at);
  `,
  // 12: bytes per task (bench/RESULTS.md, million). A reply's text stored once: a turn whose reply has a row of its own (migration 7)
  // no longer keeps a copy in reply_text; reads take the reply row's (src/store/turns.ts). Raw mail may be stored compressed: raw_codec
  // names how (NULL: as fetched; src/store/ledger.ts). No CHECK on it: SQLite cannot change one without rebuilding the table, and a
  // codec this version does not know is refused when read, by name.
  `
  UPDATE turns SET reply_text = NULL WHERE reply_text IS NOT NULL AND reply_ledger_id IN (SELECT ledger_id FROM replies);
  ALTER TABLE ledger ADD COLUMN raw_codec TEXT;
  `,
  COMPACT_MIGRATION, // 13: bytes per task, again: src/store/compact.ts.
  TASK_ROWS_MIGRATION, // 14: each task's rows per table, kept by triggers, for prune's counts: src/store/prune.ts.
  REPLY_STATUS_MIGRATION, // 15: `rejected` in the reply statuses of turns and replies: src/store/reply-status-schema.ts.
  POLL_BOUNDS_MIGRATION, // 16: a poll's text kept to its start, with its size; polls answered past a task's cap counted: src/store/messages.ts.
  NOT_OURS_MIGRATION, // 17: a Maildir's files found not ours, kept across restarts: src/store/mailbox-state.ts.
  'CREATE INDEX ledger_by_task_verdict ON ledger(task_id, verdict);', // 18: `show` reads a task's rows by ranges of it: src/store/ledger.ts shownOfTask.
  TURN_LEDGER_MIGRATION, // 19: where each turn's mail begins in the ledger, by row id, not by time: src/store/turn-ledger.ts.
];
