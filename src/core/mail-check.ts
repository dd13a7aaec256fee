import { plural } from '../plural.js';
import { isRefusal, MAX_HEADER_LINES, messageFacts, taskTag } from '../uplink/gates.js';
import { parseDkimSignatures } from '../uplink/dkim.js';
import { MailboxError, type CheckRequest, type HeaderedMessage, type MailboxPass, type Watermark } from '../uplink/mailbox.js';
import type { Verdict } from '../uplink/verdicts.js';
import { checkLogOf } from './check-log.js';
import type { BridgeContext } from './context.js';
import { DEFER_MAX_KEPT, deferralsOf } from './deferrals.js';
import { intake, intakeHeaderBlocks, type Intake, type IntakeContext } from './intake.js';
import { judgeRulesOf } from './judge.js';

export { intake, intakeHeaderBlocks, type Intake, type IntakeContext } from './intake.js';

/** What one mailbox check did. */
export interface CheckSummary {
  ok: boolean;
  /** Messages given a verdict by this check: refused on their header block, or judged whole. */
  fetched: number;
  /** Of those, refused on their header block alone: their body was never read. */
  onHeaders: number;
  /** Count per verdict recorded by this check. */
  verdicts: Partial<Record<Verdict, number>>;
  /** Candidates wait beyond this check's header or body budget. */
  more: boolean;
  /**
   * Messages whose DKIM key lookup failed temporarily in this check (gate 7): no verdict yet, tried
   * again on a later check (src/core/deferrals.ts); the check goes on with the mail after them.
   */
  deferred: number;
  /**
   * Candidates left unread for a later check: deferred before (or held before) and not due yet —
   * handed out by the mailbox without a read — or survivors signed by their agent only under
   * selectors whose key lookup failed in this check.
   */
  held: number;
  /** Maildir files this check found not ours (no agent's From, no tag): no ledger row, kept so they are not opened again. */
  notOurs: number;
  /** Message bytes the mailbox read for this check (`MailboxPass.bytesFetched`): header prefixes, header blocks, whole messages. */
  bytes: number;
  error?: string;
  durationMs: number;
}

/** Survivors of the header stage read whole at a time: each group is screened again on its header block first. */
const WHOLE_GROUP = 10;
/** Header blocks judged (and their refusals recorded) in one transaction, between two yields to the event loop, at most. */
const SCREEN_SLICE = 50;
/**
 * Header bytes judged between two yields, at most (a slice holds at least one block). Judging costs
 * up to about 0.3 ms a KiB of header (a From of many addresses: nodemailer's address parser), so
 * 50 header blocks of 200 KB held the event loop for 3 s; 256 KiB holds it for tens of ms.
 */
const SCREEN_SLICE_BYTES = 256 * 1024;
/**
 * Header lines judged between two yields, at most (a slice holds at least one block). Judging
 * costs about 2–4 µs a line besides its bytes (a forged block of 15 KB of `X:a` fields, 3,000
 * lines: 6–12 ms), so a slice of 256 KiB of such lines held the event loop 133–387 ms; 4,096
 * lines (`MAX_HEADER_LINES`, the most one readable block holds) hold it for about 10–15 ms.
 */
const SCREEN_SLICE_LINES = MAX_HEADER_LINES;
/**
 * Time a slice may hold the event loop, in ms on the monotonic clock (`BridgeContext.monotonic`):
 * past it the rest of the slice waits for the next turn. Lines do not count every cost: a 16 KiB
 * prefix of 190 Subject fields of encoded words in four charsets costs about 22 ms to judge (each
 * Subject decoded for gate 2's tag), so 16 of them held it 390 ms.
 */
const SCREEN_SLICE_MS = 10;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** LF bytes in `b`: its lines (linear, memchr). */
function linesOf(b: Buffer): number {
  let n = 0;
  for (let i = b.indexOf(0x0a); i >= 0; i = b.indexOf(0x0a, i + 1)) n++;
  return n;
}

/**
 * A batch of header blocks cut into the slices the header stage judges between two yields to the
 * event loop: consecutive, in order, each at most {@link SCREEN_SLICE} blocks,
 * {@link SCREEN_SLICE_BYTES} of header bytes and {@link SCREEN_SLICE_LINES} header lines (a block
 * larger than either is a slice of its own). Bytes and lines bound the work of judging a slice.
 */
export function screenSlices<M extends { head: Buffer }>(batch: readonly M[], maxBlocks = SCREEN_SLICE, maxBytes = SCREEN_SLICE_BYTES, maxLines = SCREEN_SLICE_LINES): M[][] {
  const slices: M[][] = [];
  let slice: M[] = [];
  let bytes = 0;
  let lines = 0;
  for (const m of batch) {
    const n = linesOf(m.head);
    if (slice.length > 0 && (slice.length >= maxBlocks || bytes + m.head.length > maxBytes || lines + n > maxLines)) {
      slices.push(slice);
      slice = [];
      bytes = 0;
      lines = 0;
    }
    slice.push(m);
    bytes += m.head.length;
    lines += n;
  }
  if (slice.length > 0) slices.push(slice);
  return slices;
}

/**
 * Runs one read-only mailbox check (docs/architecture.md, "The data path" and "The gates"): one
 * pass over what is new, header blocks first. Each batch of header blocks goes through the gates
 * that read the header block alone, and their refusals are recorded at once — they cost no body.
 * The survivors (genuine mail, or mail bearing the provider's genuine stamp: the agent's, or a
 * replay) are read whole and judged by {@link intake} in arrival order, at most
 * `mailbox.max_fetch_per_check` of them; the rest wait for the next check, ahead of everything
 * newer (they are the oldest candidates not recorded). So a flood of forged mail queued before a
 * genuine reply costs header reads, not the reply's turn. The watermark passes a message only once
 * it, and every candidate before it, has a verdict.
 *
 * A mailbox failure is recorded (for the callers' status text and /health) and returned, never
 * thrown: it must not fail an A2A call.
 */
/**
 * What a check asks of the mailbox (src/uplink/mailbox.ts `CheckRequest`): from the mailbox's
 * watermark `state`, the narrowing by the agents' addresses and tags, the budgets of
 * `[mailbox]`, the store's records of the sources judged and of the files kept as not ours, and
 * the deferred (or held) sources not due yet (src/core/deferrals.ts), handed out unread.
 */
export function checkRequest(ctx: Pick<BridgeContext, 'store' | 'config' | 'mailbox' | 'now'>, state: Watermark): CheckRequest {
  const { store, config, mailbox } = ctx;
  const deferrals = deferralsOf(store);
  return {
    watermark: { uidValidity: state.uidValidity, lastUid: state.lastUid },
    fromAddresses: config.agents.map((a) => a.address),
    subjectContains: config.agents.map((a) => `[${a.tag}:`),
    maxFetch: config.mailbox.maxFetchPerCheck,
    maxPrefixes: config.mailbox.maxPrefixesPerCheck,
    maxHeaders: config.mailbox.maxHeadersPerCheck,
    maxMessageBytes: config.mailbox.maxMessageBytes,
    isRecorded: (source) => store.ledger.isSourceRecorded(source),
    waits: (source) => deferrals.waits(source, ctx.now()),
    notOurs: {
      load: (key) => store.mailbox.notOurs(mailbox.folder, key),
      save: (key, add, drop) => store.tx((tx) => tx.mailbox.saveNotOurs(mailbox.folder, key, add, drop), { timedViewsOnly: true }),
    },
  };
}

export async function checkMailbox(ctx: BridgeContext): Promise<CheckSummary> {
  const { store, config, mailbox } = ctx;
  const started = ctx.now();
  const state = store.mailbox.state(mailbox.folder);
  const summary: CheckSummary = { ok: true, fetched: 0, onHeaders: 0, verdicts: {}, more: false, deferred: 0, held: 0, notOurs: 0, bytes: 0, durationMs: 0 };
  const intakeCtx: IntakeContext = { store, rules: judgeRulesOf(config), resolver: ctx.dkimResolver, now: ctx.now, log: ctx.log, folder: mailbox.folder, configFile: config.file };
  const count = (out: Extract<Intake, { kind: 'recorded' }>, receivedAt: number | null): void => {
    const { verdict } = out;
    summary.fetched += 1;
    summary.verdicts[verdict] = (summary.verdicts[verdict] ?? 0) + 1;
    ctx.metrics?.verdicts.inc({ verdict });
    if ((verdict.startsWith('applied:') || verdict === 'late:recorded') && receivedAt !== null) {
      ctx.metrics?.promotionSeconds.observe(Math.max(0, ctx.now() - receivedAt) / 1000);
    }
  };
  let pass: MailboxPass | undefined;
  try {
    pass = await mailbox.open(checkRequest(ctx, state));
    const { uidValidity, floor } = pass;
    if (pass.uidValidityChanged) {
      ctx.log.warn({ folder: mailbox.folder, was: state.uidValidity, now: uidValidity }, 'UIDVALIDITY changed; rescanning');
      store.tx((tx) => tx.mailbox.reset(mailbox.folder, uidValidity), { timedViewsOnly: true });
    }
    if (pass.uidValidityChanged || state.uidValidity !== uidValidity || floor > state.lastUid) {
      store.tx((tx) => tx.mailbox.advance(mailbox.folder, uidValidity, floor), { timedViewsOnly: true });
    }
    const mark = new PassWatermark(floor);
    /** Survivors of the header stage not judged yet, in arrival order. */
    const waiting: HeaderedMessage[] = [];
    const deferrals = deferralsOf(store);
    deferrals.forgetGone(ctx.now());
    /** Every survivor of the header stage this check saw: with a whole listing, the deferred messages not among them are gone. */
    const listed = new Set<string>();
    /**
     * By agent, the selectors (of its DKIM domain) whose key lookups failed in this check, each with
     * when the message deferred under it is tried again: a later message of that agent signed with
     * none but those is held until then (one lookup timeout per failing key and backoff), while its
     * mail signed with a working selector is judged. Held by agent, a queue of its mails under a
     * broken selector held its genuine replies for 24 h (attack review 7, F1).
     */
    const failedSelectors = new Map<string, Map<string, number>>();
    /** Candidates left for a later check: handed out unread (not due yet), or held. */
    let held = 0;
    /**
     * Survivors left for later that were remembered as held and whose prefix was given back to the
     * pass (`MailboxPass.giveBack`), at most {@link DEFER_MAX_KEPT} a check — as many as the
     * deferrals remember — so the next checks hand them out unread until they are due (attack
     * review 7, F2: read again by every check, such mail took the whole prefix budget and the mail
     * after it was never read). Past that a held survivor costs its prefix, as before.
     */
    let givenBack = 0;
    /**
     * When a survivor's agent's DKIM-Signatures, all naming selectors that failed in this check
     * (gate 2's agent, on its header block), may be tried again; null when it is not so signed.
     */
    const heldUntil = (h: HeaderedMessage): number | null => {
      const facts = messageFacts(h.head, h.size);
      const tag = taskTag(facts, intakeCtx.rules.agents);
      if (isRefusal(tag)) return null;
      const failed = failedSelectors.get(tag.agent.name);
      if (!failed) return null;
      const due = parseDkimSignatures(facts.fields).filter((sig) => sig.d === tag.agent.dkimDomain).map((sig) => failed.get(sig.s));
      return due.length > 0 && due.every((t) => t !== undefined) ? Math.min(...due) : null;
    };
    /**
     * Leaves a survivor read by its prefix for a later check when it is not due yet or is held
     * (remembered until its selectors' deferral is due, and its prefix given back: see `givenBack`).
     * @returns whether it was left
     */
    const leftForLater = (h: HeaderedMessage): boolean => {
      const now = ctx.now();
      const until = deferrals.waits(h.source, now) ? deferrals.dueAt(h.source) : failedSelectors.size > 0 ? heldUntil(h) : null;
      if (until === null) return false;
      held++;
      if (givenBack < DEFER_MAX_KEPT) {
        givenBack++;
        deferrals.held(h.source, now, until);
        pass!.giveBack(1);
      }
      return true;
    };
    let budget = Math.max(0, config.mailbox.maxFetchPerCheck);
    const clock = ctx.monotonic ?? (() => performance.now());
    const screenSome = (batch: readonly HeaderedMessage[], stop?: () => boolean): { survivors: HeaderedMessage[]; rest: HeaderedMessage[] } => {
      const { survivors, recorded, rest } = intakeHeaderBlocks(intakeCtx, batch, uidValidity, { maxMessageBytes: config.mailbox.maxMessageBytes, passTo: (s) => mark.recorded(s), ...(stop ? { stop } : {}) });
      for (const r of recorded) {
        count(r.out, r.message.receivedAt);
        deferrals.done(r.message.source); // a deferred message refused on its header block now (its task gone)
      }
      summary.onHeaders += recorded.length;
      for (const h of survivors) listed.add(h.source);
      return { survivors, rest };
    };
    const screen = (batch: readonly HeaderedMessage[]): HeaderedMessage[] => screenSome(batch).survivors;
    const screenAll = async (batch: readonly HeaderedMessage[]): Promise<HeaderedMessage[]> => {
      const left: HeaderedMessage[] = [];
      for (const slice of screenSlices(batch)) {
        for (let rest: readonly HeaderedMessage[] = slice; rest.length > 0; ) {
          const from = clock();
          const done = screenSome(rest, () => clock() - from >= SCREEN_SLICE_MS);
          left.push(...done.survivors);
          rest = done.rest;
          await yieldToLoop(); // the event loop answers between slices, and when one ran out of time
        }
      }
      return left;
    };
    for (let batch = await pass.headers(); batch.length > 0; batch = await pass.headers()) {
      // In order, unread ones too: the watermark stays before each (they have no verdict yet).
      mark.add(batch);
      const unread = batch.filter((h) => h.unread);
      held += unread.length;
      for (const h of unread) listed.add(h.source);
      const left = await screenAll(unread.length ? batch.filter((h) => !h.unread) : batch);
      // Header blocks that run on past their prefix and whose stamp could not refuse them: read on
      // (at most `max_headers_per_check` a check; the rest wait) and screened on the whole block.
      const cut = left.filter((h) => h.prefixOnly);
      const blocks = cut.length ? new Map((await screenAll(await pass.headerBlocks(cut))).map((h) => [h.source, h])) : null;
      for (const h of left) {
        const now = h.prefixOnly ? blocks?.get(h.source) : h;
        if (now && !leftForLater(now)) waiting.push(now);
      }
      while (waiting.length > 0 && budget > 0) {
        // Screened again first: a replay of a survivor judged a moment ago is now known by its signature.
        const screened = screen(waiting.splice(0, Math.min(WHOLE_GROUP, budget)));
        const group = screened.filter((h) => !leftForLater(h));
        budget -= group.length;
        const whole = await pass.whole(group);
        const heads = new Map(group.map((h) => [h.source, h]));
        for (const msg of whole) {
          // Read in this group before an earlier one of its agent was deferred: left for later too.
          const head = heads.get(msg.source);
          if (failedSelectors.size > 0 && head && leftForLater(head)) continue;
          const outcome = await intake(intakeCtx, msg, uidValidity, mark.peek(msg.source));
          if (outcome.kind === 'deferred') {
            // The reason names the signature's selector, which the agent chose (docs/agent-text.md); it goes to the log.
            ctx.log.info({ folder: mailbox.folder, uid: msg.uid, agent: outcome.agent, reason: outcome.reason }, 'reply deferred');
            if (outcome.cause === 'parser') {
              // Ours, and every reply's: stop here, in order; the next check judges it (and every survivor after it) again.
              summary.more = true;
              // The callers' status text shows this error: the bridge's words only.
              throw new MailboxError('a reply could not be read yet (the MIME parser could not be loaded: see the log); it will be judged again on the next check', 'io');
            }
            // One agent's DNS: the check goes on with the mail after it (attack review 6, F3). The
            // message has no verdict, so the watermark stays before it and it is a candidate of
            // the next checks, tried again after its backoff; the agent's other mail signed under
            // the same failing selectors waits too.
            summary.deferred += 1;
            deferrals.deferred(msg.source, ctx.now(), outcome.taskId);
            if (outcome.agent) {
              const failed = failedSelectors.get(outcome.agent) ?? new Map<string, number>();
              const due = deferrals.dueAt(msg.source) ?? ctx.now();
              for (const sel of outcome.selectors ?? []) if (!failed.has(sel)) failed.set(sel, due);
              failedSelectors.set(outcome.agent, failed);
            }
            continue;
          }
          deferrals.done(msg.source);
          mark.recorded(msg.source);
          if (outcome.kind === 'recorded') count(outcome, msg.receivedAt);
        }
      }
    }
    // Deferred mail, and mail left for later behind it, waits for time (its backoff, its agent's
    // DNS), not for budget: it does not make the next check come sooner (`Bridge.checkDue`).
    summary.more = pass.more || waiting.length > 0;
    // Every candidate was listed and read: a deferred message not among them was deleted (or got its verdict).
    if (!summary.more) deferrals.forgetGone(ctx.now(), listed);
    summary.held = held;
    summary.notOurs = pass.notOurs ?? 0;
    let applied = 0;
    let refused = 0;
    for (const [v, c] of Object.entries(summary.verdicts)) {
      if (v.startsWith('applied:') || v === 'late:recorded') applied += c ?? 0;
      else refused += c ?? 0;
    }
    const onHeaders = summary.onHeaders ? ` (${summary.onHeaders} on the header block)` : '';
    const line = `ok, ${plural(summary.fetched, 'new message')}, ${applied} applied${refused ? `, ${refused} refused${onHeaders}` : ''}${summary.deferred + summary.held ? `, ${summary.deferred + summary.held} waiting for an agent's DKIM key (its lookup failed; tried again later)` : ''}${summary.notOurs ? `, ${plural(summary.notOurs, 'file')} not ours` : ''}${summary.more ? ', more waiting' : ''}`;
    // Only a timed view (a WORKING task's "Mailbox last checked …") shows it; no view shows the
    // watermark, the files not ours or UIDVALIDITY (the commits above): src/core/view-cache.ts.
    const ended = store.tx((tx) => tx.mailbox.recordCheck(mailbox.folder, { at: ctx.now(), ok: true, result: line }), { timedViewsOnly: true });
    // A run of failures was logged as it began (and at each new error); its end is too, so a log shows when the mailbox came back.
    checkLogOf(ctx.log).ok(mailbox.folder, ended && 'failingSince' in ended ? ended : null);
  } catch (err) {
    const message = err instanceof MailboxError ? err.message : `unexpected error: ${(err as Error).message}`;
    summary.ok = false;
    summary.error = message;
    // Logged once per run of failures and per new error: a check that fails as the last one did (the
    // watcher's follow-up check 2 ms later, the next tick) is at debug only; "ok again" ends the run;
    // a flapping mailbox, at most once a minute (src/core/check-log.ts).
    let repeated = false;
    try {
      const r = store.tx((tx) => tx.mailbox.recordCheck(mailbox.folder, { at: ctx.now(), ok: false, result: 'failed', error: message, ...(ctx.startedAt !== undefined ? { runSince: ctx.startedAt } : {}) }), { timedViewsOnly: true });
      repeated = r !== null && 'repeated' in r && r.repeated;
    } finally {
      checkLogOf(ctx.log).failed(ctx.now(), mailbox.folder, message, repeated);
    }
  } finally {
    await pass?.close();
    summary.bytes = pass?.bytesFetched ?? 0;
  }
  summary.durationMs = ctx.now() - started;
  ctx.log.debug({ folder: mailbox.folder, ok: summary.ok, fetched: summary.fetched, onHeaders: summary.onHeaders, notOurs: summary.notOurs, more: summary.more, bytes: summary.bytes, ms: summary.durationMs }, 'mailbox check done');
  ctx.metrics?.checks.inc({ result: summary.ok ? 'ok' : 'error' });
  ctx.metrics?.checkSeconds.observe(summary.durationMs / 1000);
  return summary;
}

/**
 * The watermark of one pass: it moves past a candidate only once every candidate handed out
 * before it has a verdict, so a survivor waiting for its body (or a reply deferred for DNS) holds
 * it back while later mail is recorded around it; each candidate says where the watermark may go
 * then (`HeaderedMessage.passes`).
 */
class PassWatermark {
  readonly #order: HeaderedMessage[] = [];
  readonly #done = new Set<string>();
  #front = 0;
  #at: number;

  constructor(floor: number) {
    this.#at = floor;
  }

  /** Candidates handed out by the pass, in its order. */
  add(batch: readonly HeaderedMessage[]): void {
    this.#order.push(...batch);
  }

  /** Where the watermark would be once `source` has a verdict, with the verdicts so far. */
  peek(source: string): number {
    let i = this.#front;
    let at = this.#at;
    while (i < this.#order.length && (this.#order[i]!.source === source || this.#done.has(this.#order[i]!.source))) at = this.#order[i++]!.passes;
    return at;
  }

  /**
   * `source` has a verdict.
   * @returns where the watermark moves now, or null when it stays (an older candidate waits)
   */
  recorded(source: string): number | null {
    this.#done.add(source);
    const was = this.#at;
    while (this.#front < this.#order.length && this.#done.has(this.#order[this.#front]!.source)) this.#at = this.#order[this.#front++]!.passes;
    return this.#at !== was ? this.#at : null;
  }
}
