/**
 * The connections of one IMAP pass and its FETCH commands (src/uplink/imap-mailbox.ts): one FETCH
 * the server refuses is retried UID by UID, so one message it cannot serve never holds back the
 * others.
 */
import type { ImapFlow, ImapFlowError } from 'imapflow';

/** What a pass is doing, for error messages. */
export type Phase = 'connect' | 'login' | 'examine' | 'search' | 'fetch';

/**
 * The connections of one check: normally one; a new one after the server hung up on a FETCH it
 * could not serve (Dovecot answers a message file it cannot open with `BYE FETCH failed`).
 */
export class Session {
  phase: Phase = 'connect';
  /** The first 'error' event of the current connection (imapflow #302: a command then rejects with a vaguer NoConnection). */
  eventError: ImapFlowError | undefined;
  readonly #all: ImapFlow[] = [];

  constructor(
    public client: ImapFlow,
    private readonly active: Set<ImapFlow>,
  ) {
    this.#track(client);
  }

  replace(client: ImapFlow): void {
    this.client.close();
    this.eventError = undefined;
    this.client = client;
    this.#track(client);
  }

  #track(client: ImapFlow): void {
    // imapflow #302: without a listener a socket error or timeout is an uncaught 'error' event.
    client.on('error', (err: ImapFlowError) => {
      if (client === this.client) this.eventError ??= err;
    });
    this.#all.push(client);
    this.active.add(client);
  }

  /** Forgets the connections `replace` closed: the session goes on with its current one alone (kept between checks). */
  forgetReplaced(): void {
    for (const c of this.#all.splice(0)) if (c !== this.client) this.active.delete(c);
    this.#all.push(this.client);
  }

  closeAll(): void {
    for (const c of this.#all) {
      c.close();
      this.active.delete(c);
    }
  }
}

/** RFC 5530 response codes that say "not now" rather than "not this message". */
const TRANSIENT_RESPONSE_CODES = new Set(['UNAVAILABLE', 'INUSE', 'LIMIT', 'OVERQUOTA', 'CONTACTADMIN']);

/**
 * Why the server refused a FETCH, when it did: a tagged NO or BAD (not a transient RFC 5530 code,
 * not a throttle), or a BYE. Null for anything else (a timeout, a reset connection): those fail the
 * check as before.
 */
function refusal(err: unknown): string | null {
  const e = err as ImapFlowError;
  if (e?.code === 'ETHROTTLE') return null;
  if (e?.responseStatus === 'NO' || e?.responseStatus === 'BAD') {
    if (TRANSIENT_RESPONSE_CODES.has((e.serverResponseCode ?? '').toUpperCase())) return null;
    return `${e.responseStatus}${e.serverResponseCode ? ` [${e.serverResponseCode}]` : ''} ${e.responseText ?? ''}`.trim();
  }
  if (e?.code === 'NoConnection' && e.reason) return `BYE ${e.reason}`;
  return null;
}

export type FetchQuery = Parameters<ImapFlow['fetchAll']>[1];
export type Fetched = Awaited<ReturnType<ImapFlow['fetchAll']>>[number];

/**
 * `UID FETCH` of `uids` in one command; when the server refuses it (see `refusal`), each UID alone,
 * so one message the server cannot serve does not hold back the others. A UID refused alone twice
 * (the second time on a fresh connection when the server hung up) goes into `refused` with the
 * server's words. Other failures are thrown.
 *
 * @param has whether an answer holds what was asked for
 * @returns the answers by UID (UIDs already in `refused` are not asked for)
 */
export async function fetchIsolating(
  session: Session,
  reopen: () => Promise<void>,
  uids: number[],
  query: FetchQuery,
  has: (m: Fetched) => boolean,
  refused: Map<number, string>,
): Promise<Map<number, Fetched>> {
  const out = new Map<number, Fetched>();
  const asked = uids.filter((u) => !refused.has(u));
  if (asked.length === 0) return out;
  const once = async (set: number[]): Promise<void> => {
    if (!session.client.usable) await reopen();
    // Only answers holding what was asked: an unsolicited FETCH (a flag change by another
    // session) for the same UID must not replace one.
    for (const m of await session.client.fetchAll(set.join(','), query, { uid: true })) if (has(m) && set.includes(m.uid)) out.set(m.uid, m);
  };
  try {
    await once(asked);
    return out;
  } catch (err) {
    if (refusal(err) === null) throw err;
  }
  for (const uid of asked) {
    let why: string | null = null;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await once([uid]);
        why = null;
        break;
      } catch (err) {
        why = refusal(err);
        if (why === null) throw err;
      }
    }
    if (why !== null) refused.set(uid, why);
  }
  return out;
}
