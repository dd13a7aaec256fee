import { LARGE_VALUES_MIGRATION } from './large-values.js';

/**
 * Versioned schema migrations. Each entry runs once, in order, inside one transaction, and
 * bumps `PRAGMA user_version` to its index + 1. Never edit a shipped entry; append a new one.
 *
 * Times are integers in ms since the Unix epoch (UTC). States are the A2A v1.0 TaskState names
 * without the `TASK_STATE_` prefix.
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
];
