import { attemptResultText, statusAndDetail } from './attempt-text.js';
import type { AttemptRow } from '../store/attempts.js';
import type { AuditRow } from '../store/audit.js';
import type { LedgerRow } from '../store/ledger.js';
import type { StoreReads } from '../store/store.js';
import type { TaskEvent } from '../store/task-events.js';
import type { TaskRow } from '../store/task-rows.js';
import { isTerminal } from '../store/task-state.js';
import type { TurnRow } from '../store/turns.js';
import { CliFailure } from './errors.js';
import { inertText } from '../inert-text.js';
import { clean, cleanLines, gap, isoJson, isoUtc, printJson, table, truncate } from './format.js';
import { ledgerJson } from './ledger.js';
import { openReadOnly, storeCommand, type StoreLocation } from './open-store.js';
import { resolveTaskId } from './task-id.js';
import { taskJson } from './tasks.js';

/** Everything the store holds about one task, as read for `show`. */
export interface TaskRecord {
  task: TaskRow;
  turns: TurnRow[];
  attempts: AttemptRow[];
  /** The ledger rows the timeline lists ({@link SHOWN_LEDGER}), oldest first: never every row of a flooded task. */
  ledger: LedgerRow[];
  /** Every ledger row naming the task, counted per verdict (sorted by verdict). */
  ledgerCounts: { verdict: string; count: number }[];
  events: TaskEvent[];
  /** One entry per arrival at a terminal state (an operator's retry can reopen a task that failed by dispatch). */
  audit: AuditRow[];
}

/** One line of the timeline. `kind` orders lines that share a time: a task's creation, then its turn, attempts, mail, moves, audit. */
export interface TimelineEntry {
  at: number;
  kind: 'created' | 'turn' | 'attempt' | 'mail' | 'state' | 'note' | 'audit';
  text: string;
}

/**
 * The measured gaps of one turn, in ms (null when a point is not reached yet):
 * dispatch (the first attempt of the turn's current webhook-id; the turn's creation when none
 * was made) → webhook accepted (2xx) → the reply's `Date`
 * header (the agent's clock: its working time) → the reply seen in the mailbox (mail delivery
 * plus polling latency) → promoted (applied, or kept late).
 */
export interface TurnGaps {
  turn: number;
  dispatchedAt: number;
  acceptedAt: number | null;
  mailDateAt: number | null;
  /** When the mailbox received the reply (IMAP INTERNALDATE, Maildir mtime); null when unknown. */
  arrivedAt: number | null;
  seenAt: number | null;
  promotedAt: number | null;
  dispatchToAccepted: number | null;
  acceptedToMailDate: number | null;
  mailDateToSeen: number | null;
  /** Split of mailDateToSeen when the arrival time is known: delivery to the mailbox, then polling. */
  mailDateToArrived: number | null;
  arrivedToSeen: number | null;
  seenToPromoted: number | null;
  dispatchToPromoted: number | null;
}

/**
 * How many ledger rows `show` lists: the newest, and the first the judge accepted (`applied:*`,
 * `late:recorded`), so a genuine reply is listed however much forged mail tagged with the task came
 * after it; each turn's reply row is listed too. The others are counted per verdict, and
 * `ledger --task` lists them.
 */
export const SHOWN_LEDGER = { newest: 200, accepted: 200 } as const;

/** The ledger rows of the task the timeline leaves out: how many, and how many per verdict (verdicts that have some). */
export function ledgerOmitted(r: TaskRecord): { total: number; listed: number; omitted: number; byVerdict: Record<string, number> } {
  const listed = new Map<string, number>();
  for (const l of r.ledger) listed.set(l.verdict, (listed.get(l.verdict) ?? 0) + 1);
  const byVerdict: Record<string, number> = {};
  let total = 0;
  let omitted = 0;
  for (const { verdict, count } of r.ledgerCounts) {
    total += count;
    const left = count - (listed.get(verdict) ?? 0);
    if (left <= 0) continue;
    byVerdict[verdict] = left;
    omitted += left;
  }
  return { total, listed: r.ledger.length, omitted, byVerdict };
}

/**
 * The line after the timeline when it leaves ledger rows out: how many of each verdict, and the
 * `ledger` command that lists them (`command` makes the command line for `ledger`'s arguments).
 * Undefined when every row is listed.
 */
export function omittedText(r: TaskRecord, command: (args: string) => string): string | undefined {
  const o = ledgerOmitted(r);
  if (o.omitted === 0) return undefined;
  const counts = Object.entries(o.byVerdict)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([v, n]) => `${n} ${v}`)
    .join(', ');
  // The newest rows are listed: the rows left out are all older than the oldest of them.
  const newest = r.ledger.slice(-SHOWN_LEDGER.newest);
  const before = newest[0]?.id;
  const page = before === undefined ? '' : ` --before ${before}`;
  return `mail: ${o.listed} of the ${o.total} ledger rows naming this task are listed (the newest ${SHOWN_LEDGER.newest}, the first ${SHOWN_LEDGER.accepted} accepted, each turn's reply); left out: ${counts}. The rest, newest first: ${command(`ledger --task ${r.task.id}${page}`)}`;
}

const KIND_ORDER: Record<TimelineEntry['kind'], number> = { created: 0, turn: 1, attempt: 2, mail: 3, state: 4, note: 5, audit: 6 };

function diff(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : b - a;
}

/** The gaps of each turn, from the turn row, its webhook attempts and the ledger row of its reply. */
export function turnGaps(turns: readonly TurnRow[], ledger: readonly LedgerRow[], attempts: readonly AttemptRow[] = []): TurnGaps[] {
  return turns.map((t) => {
    // An operator's retry gives the turn a new webhook-id: its dispatch starts with that id's first attempt.
    const first = attempts.find((a) => a.dispatchId === t.dispatchId);
    const dispatchedAt = Math.min(first?.startedAt ?? t.createdAt, t.acceptedAt ?? Number.POSITIVE_INFINITY);
    const reply = t.replyLedgerId === null ? undefined : ledger.find((l) => l.id === t.replyLedgerId);
    const parsedDate = reply?.dateHeader ? Date.parse(reply.dateHeader) : Number.NaN;
    const mailDateAt = Number.isNaN(parsedDate) ? null : parsedDate;
    const seenAt = reply?.seenAt ?? null;
    const arrivedAt = reply?.receivedAt ?? null;
    const promotedAt = t.repliedAt;
    return {
      turn: t.turn,
      dispatchedAt,
      acceptedAt: t.acceptedAt,
      mailDateAt,
      arrivedAt,
      seenAt,
      promotedAt,
      dispatchToAccepted: diff(dispatchedAt, t.acceptedAt),
      acceptedToMailDate: diff(t.acceptedAt, mailDateAt),
      mailDateToSeen: diff(mailDateAt, seenAt),
      mailDateToArrived: diff(mailDateAt, arrivedAt),
      arrivedToSeen: diff(arrivedAt, seenAt),
      seenToPromoted: diff(seenAt, promotedAt),
      dispatchToPromoted: diff(dispatchedAt, promotedAt),
    };
  });
}

/**
 * One attempt's line: its outcome, how long it took (`took`: from its start to its outcome), and
 * for a retried attempt its next one ({@link nextAttempt}): while it is scheduled, the instant the
 * caller's status text names ("Next attempt at", src/core/status-text.ts: the turn's
 * next_attempt_at, formatted by the same `iso`); once it ran, when it started, said as such. The
 * time it had been scheduled for is not kept once it runs (next_attempt_at holds the turn's current
 * schedule only), and its start, a timer's tick later, can fall in the next second: stated as "next
 * attempt at", it read as another time than the one the caller was given (fresh-user trial).
 */
function attemptText(a: AttemptRow, next: NextAttempt | null): string {
  const what = `webhook attempt ${a.attempt} (turn ${a.turn})`;
  if (a.outcome === null) return `${what}: no outcome recorded (in flight, or the process stopped)${statusAndDetail(a.httpStatus, a.error)}`;
  const took = a.finishedAt === null ? '' : `; took ${gap(a.finishedAt - a.startedAt)}`;
  const then = a.outcome !== 'retry' || next === null ? '' : next.started ? `; next attempt started ${isoUtc(next.at)}` : `; next attempt at ${isoUtc(next.at)}`;
  return `${what} ${attemptResultText({ outcome: a.outcome, httpStatus: a.httpStatus, error: a.error })}${took}${then}`;
}

/** The attempt after another: when it started (`started`), or is scheduled (ms since the epoch). */
interface NextAttempt {
  at: number;
  started: boolean;
}

/** The attempt after `a`: the next row of its dispatch, or its turn's next_attempt_at while pending. */
function nextAttempt(a: AttemptRow, r: TaskRecord): NextAttempt | null {
  const following = r.attempts.find((x) => x.dispatchId === a.dispatchId && x.attempt === a.attempt + 1);
  if (following) return { at: following.startedAt, started: true };
  const turn = r.turns.find((t) => t.dispatchId === a.dispatchId);
  return turn?.dispatchState === 'pending' && turn.nextAttemptAt !== null ? { at: turn.nextAttemptAt, started: false } : null;
}

/**
 * The line of a turn stored. An operator's `retry` gives the turn row a new webhook-id and deadline
 * in place (src/store/turns.ts, the `redispatch` edge), so a retried turn (its first attempt under
 * another webhook-id) names the webhook-id it was stored with, from that attempt, and the row's
 * current ones as the retry's: the line must not say the turn was stored with what came later.
 */
function turnText(t: TurnRow, attempts: readonly AttemptRow[]): string {
  const ask = JSON.stringify(truncate(t.ask, 60));
  let first: AttemptRow | undefined;
  for (const a of attempts) if (a.turn === t.turn && (first === undefined || a.id < first.id)) first = a;
  if (first === undefined || first.dispatchId === t.dispatchId) return `turn ${t.turn} stored, deadline ${isoUtc(t.deadlineAt)}, webhook-id ${t.dispatchId}: ${ask}`;
  return `turn ${t.turn} stored, webhook-id ${first.dispatchId}: ${ask} (retried since: now webhook-id ${t.dispatchId}, deadline ${isoUtc(t.deadlineAt)})`;
}

/** The most characters of a mail's Message-ID shown in a timeline row (one is rarely over 60). */
const MESSAGE_ID_SHOWN = 60;

/**
 * A mail's Message-ID as a timeline row shows it: each run of white space one space, every
 * character outside printable ASCII escaped (RFC 5322 §3.6.4 allows none), cut at
 * {@link MESSAGE_ID_SHOWN}. The sender's text, a forger's too: kept short, so it cannot hold a
 * line that, wrapped by the terminal, reads as a row of its own (attack reviews 4 and 5: a Date
 * padded with 2,400 spaces, then with fullwidth letters, ended in "mail #2 applied…").
 */
export function messageIdCell(value: string): string {
  const ascii = value.replace(/\s+/g, ' ').trim().replace(/[^\x20-\x7e]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
  return truncate(ascii, MESSAGE_ID_SHOWN);
}

/**
 * A mail's Date as a timeline row shows it: the moment it names, written by the bridge (ISO 8601,
 * UTC), or "unreadable" when `Date.parse` cannot read it; never the header's own text, whose
 * comments may hold anything (attack reviews 4 and 5).
 */
export function dateCell(value: string): string {
  const at = Date.parse(value);
  return Number.isNaN(at) ? 'unreadable' : isoUtc(at);
}

/** The task's timeline, oldest first: turns, webhook attempts, ledger verdicts, state changes and notes, the audit entry. */
export function timeline(r: TaskRecord): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const t of r.turns) out.push({ at: t.createdAt, kind: 'turn', text: turnText(t, r.attempts) });
  for (const a of r.attempts) out.push({ at: a.startedAt, kind: 'attempt', text: attemptText(a, nextAttempt(a, r)) });
  for (const l of r.ledger) {
    const date = l.dateHeader ? `, Date ${dateCell(l.dateHeader)}` : '';
    out.push({ at: l.seenAt, kind: 'mail', text: `mail #${l.id} ${l.verdict}: ${inertText(l.reason)} (Message-ID ${l.messageId === null ? '-' : messageIdCell(l.messageId)}${date})` });
  }
  for (const e of r.events) {
    if (e.fromState === null) out.push({ at: e.at, kind: 'created', text: `created ${e.toState}: ${e.cause}` });
    else if (e.fromState === e.toState) out.push({ at: e.at, kind: 'note', text: `note (${e.toState}): ${e.cause}` });
    else out.push({ at: e.at, kind: 'state', text: `${e.fromState} → ${e.toState}: ${e.cause}` });
  }
  for (const a of r.audit) out.push({ at: a.writtenAt, kind: 'audit', text: `audit entry #${a.seq} written (${a.state})` });
  return out.sort((a, b) => a.at - b.at || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
}

/**
 * The header's deadline: the task's while a turn awaits the agent; otherwise the current turn's,
 * saying why it no longer runs (the task ended, or it waits for the caller's answer).
 */
export function deadlineText(r: TaskRecord): string {
  const t = r.task;
  if (t.deadlineAt !== null) return isoUtc(t.deadlineAt);
  const turn = r.turns.find((x) => x.turn === t.turn);
  if (!turn) return '-';
  const why = isTerminal(t.state) ? `no longer applies: the task is ${t.state}` : t.state === 'INPUT_REQUIRED' ? 'no longer applies: waiting for the caller\'s answer' : 'not running';
  return `${isoUtc(turn.deadlineAt)} (turn ${turn.turn}'s; ${why})`;
}

/** The human form of `show`: a header, the timeline as aligned lines, then the gaps of each turn. */
export function formatShow(r: TaskRecord, now: number, command: (args: string) => string = (args) => `a2a-mailbridge ${args}`): string {
  const t = r.task;
  const lines = [
    ...[
      `task      ${t.id}`,
      `agent     ${t.agent}`,
      `context   ${t.contextId}`,
      `state     ${t.state}${t.failedBy ? ` (failed by ${t.failedBy})` : ''}: ${t.stateReason ?? '-'}`,
      `caller    ${t.caller ?? '-'}`,
      `created   ${isoUtc(t.createdAt)}   updated ${isoUtc(t.updatedAt)}   deadline ${deadlineText(r)}`,
    ].map(clean),
    '',
    table(['TIME (UTC)', 'WHAT'], timeline(r).map((e) => [isoUtc(e.at), e.text])),
  ];
  const omitted = omittedText(r, command);
  if (omitted !== undefined) lines.push(clean(omitted));
  // A point not reached by a finished task never will be: the clock stops when the task ended.
  const endedAt = isTerminal(t.state) ? t.updatedAt : null;
  for (const g of turnGaps(r.turns, r.ledger, r.attempts)) {
    const open = (ms: number | null, since: number | null): string => {
      if (ms !== null) return gap(ms);
      if (since === null) return '-';
      if (endedAt !== null) return `never (${t.state} ${gap(Math.max(0, endedAt - since))} later)`;
      return `not yet (${gap(now - since)} so far)`;
    };
    lines.push(
      '',
      `turn ${g.turn} gaps`,
      table(
        ['FROM → TO', 'GAP', 'WHOSE TIME'],
        [
          ['dispatch → webhook accepted', open(g.dispatchToAccepted, g.dispatchedAt), 'webhook delivery and retries'],
          ['webhook accepted → mail Date', open(g.acceptedToMailDate, g.acceptedAt), "the agent's work (its clock)"],
          ['mail Date → mail seen', open(g.mailDateToSeen, g.mailDateAt), 'mail delivery and polling'],
          ...(g.arrivedAt !== null
            ? [
                ['  mail Date → in the mailbox', open(g.mailDateToArrived, g.mailDateAt), 'mail delivery'],
                ['  in the mailbox → mail seen', open(g.arrivedToSeen, g.arrivedAt), 'polling (the caller, or the watcher)'],
              ]
            : []),
          ['mail seen → promoted', open(g.seenToPromoted, g.seenAt), 'the gates'],
          ['dispatch → promoted', open(g.dispatchToPromoted, g.dispatchedAt), 'total'],
        ],
      ),
    );
  }
  return lines.join('\n');
}

/**
 * The JSON form of `show`: rows with ISO times, the timeline and the gaps. Never the reply tokens
 * or the signed envelopes. `ledger` holds the rows the timeline lists; `ledgerOmitted` counts all
 * of the task's rows (`total`), those listed, and those left out (`omitted`, and per verdict).
 */
export function showJson(r: TaskRecord) {
  return {
    task: taskJson(r.task),
    turns: r.turns.map((t) => ({
      turn: t.turn,
      ask: t.ask,
      dispatchId: t.dispatchId,
      dispatchState: t.dispatchState,
      createdAt: isoJson(t.createdAt),
      deadlineAt: isoJson(t.deadlineAt),
      acceptedAt: isoJson(t.acceptedAt),
      nextAttemptAt: isoJson(t.nextAttemptAt),
      replyStatus: t.replyStatus,
      replyText: t.replyText,
      replyLedgerId: t.replyLedgerId,
      repliedAt: isoJson(t.repliedAt),
    })),
    attempts: r.attempts.map((a) => ({ ...a, startedAt: isoJson(a.startedAt), finishedAt: isoJson(a.finishedAt) })),
    ledger: r.ledger.map(ledgerJson),
    ledgerOmitted: ledgerOmitted(r),
    events: r.events.map((e) => ({ ...e, at: isoJson(e.at) })),
    audit: r.audit.map((a) => ({ ...a, writtenAt: isoJson(a.writtenAt) })),
    timeline: timeline(r).map((e) => ({ ...e, at: isoJson(e.at) })),
    gapsMs: turnGaps(r.turns, r.ledger, r.attempts),
  };
}

/** Reads everything about one task but its ledger rows beyond {@link SHOWN_LEDGER}, which are counted. */
export function readTaskRecord(db: StoreReads, taskId: string): TaskRecord | undefined {
  const task = db.tasks.get(taskId);
  if (!task) return undefined;
  const ledger = db.ledger.shownOfTask(task.id, SHOWN_LEDGER.newest, SHOWN_LEDGER.accepted);
  return {
    task,
    turns: db.turns.ofTask(task.id),
    attempts: db.attempts.ofTask(task.id),
    ledger: ledger.rows,
    ledgerCounts: ledger.counts,
    events: db.events.of(task.id),
    audit: db.audit.of(task.id),
  };
}

/**
 * `a2a-mailbridge show <task>`: one task's timeline and gaps, from the store opened read-only.
 * The id may be a unique prefix. A task removed by `prune` still shows its audit entry. Of the
 * task's ledger rows it lists {@link SHOWN_LEDGER} and counts the rest (the store query is limited:
 * memory does not grow with forged mail tagged with the task).
 *
 * @returns the exit code: 0
 * @throws CliFailure when no task (and no audit entry) has this id; ConfigError/StoreError
 */
export function runShow(where: StoreLocation, idOrPrefix: string, o: { json?: boolean }, now = Date.now()): number {
  const db = openReadOnly(where);
  try {
    const id = resolveTaskId(db, idOrPrefix);
    const record = id === undefined ? undefined : readTaskRecord(db, id);
    if (!record) {
      const audit = db.audit.of(idOrPrefix);
      if (audit.length === 0) {
        const hint = idOrPrefix.length < 4 ? ' (a prefix needs at least 4 characters)' : '';
        throw new CliFailure(`no task ${idOrPrefix}${hint}; list them with: ${storeCommand(where, 'tasks')}`);
      }
      const entries = audit.map((a) => ({ ...a, writtenAt: isoJson(a.writtenAt) }));
      if (o.json) printJson({ task: idOrPrefix, pruned: true, audit: entries });
      else process.stdout.write(`${cleanLines(`task ${idOrPrefix} was pruned; its audit entries remain:\n${JSON.stringify(entries, null, 2)}`)}\n`);
      return 0;
    }
    if (o.json) printJson(showJson(record));
    else process.stdout.write(`${formatShow(record, now, (args) => storeCommand(where, args))}\n`);
    return 0;
  } finally {
    db.close();
  }
}
