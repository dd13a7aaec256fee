/**
 * `doctor`'s look at the agent's most recent tagged mail: the same gate-5 analysis as `provider
 * detect`, and whether the mail would pass gates 3–7 with the configured provider — and, when not,
 * why and what to change. The mail is judged again by the judge itself (src/core/judge.ts) on a
 * read-only store, nothing written. Looks DKIM keys up in DNS.
 */
import { existsSync } from 'node:fs';
import type { AgentConfig, Config } from '../config/config.js';
import { commandLine, shellWord } from '../config/config-path.js';
import { judgeHeaderBlock, judgeMessage, judgeRulesOf, type Decision } from '../core/judge.js';
import type { LedgerRow } from '../store/ledger.js';
import { Store } from '../store/store.js';
import { configLines, detectProvider } from '../uplink/detect.js';
import { makeResolver, type DnsResolver } from '../uplink/dkim.js';
import { sourceReader, type SourceMailbox } from '../uplink/message-by-source.js';
import { imapAuth } from '../uplink/oauth2.js';
import { findTrustedResults, type ProviderProfile } from '../uplink/border.js';
import { fieldsNamed, type HeaderField } from '../uplink/raw-headers.js';
import { stampsTrustedById, unbordered, type Unbordered } from '../uplink/unbordered.js';
import { agentSign } from './doctor-agent-sign.js';
import type { Check } from './doctor.js';

/**
 * "Nothing in the config needs changing" is said of a refused mail only when it is true of the
 * configured trust settings (attack review 6, F5): the config trusted no stamp in the mail and
 * would trust none — the mail's own Received fields leave no border under any profile
 * (src/uplink/unbordered.ts) and none of its Authentication-Results passes the config's id test
 * (`stampsTrustedById`) — and the latest reply the judge accepted, if any, still passes. A mail
 * that carries a stamp the config trusts (or would trust at a border) and yet never passed a mail
 * server, came in from outside, or holds the DKIM-Signature the stamp says passed, is a stamp a
 * hand-made or forged mail can carry: the mail cannot show the trust settings are right (a wrong
 * `border_host` lets a sender's own Received and stamp stand for the provider's, and a trusted
 * `dkim=pass` naming a signature by `header.b` is gate 7's proof), so doctor fails and says to
 * check them against a genuine reply. The bridge refuses such a mail either way.
 *
 * Any other refused mail fails doctor only when it carries a sign of being the agent's that its
 * sender cannot make (src/cli/doctor-agent-sign.ts: a `dkim=pass` for the agent's DKIM domain or a
 * `dmarc=pass` for its From domain in the stamp the config trusts, or a DKIM-Signature of the
 * agent's domain that verifies). Without one it is a warning: anyone who can send mail to the
 * mailbox can make a forgery the latest tagged mail (an Authentication-Results written below the
 * border, a copied signature), and it says nothing of the config (fresh-user trial). Its reason
 * quotes the mail's headers: it is shown as a JSON string, so where it ends is the bridge's.
 * docs/providers.md, "doctor and the latest agent mail", states the whole rule.
 * @param resolver DNS for the DKIM key lookups (default: `[dns] servers`, else the system's)
 * @returns `fail` when the latest tagged mail would be refused at gates 3–7 and carries a sign of
 *   being the agent's, or carries a stamp the config trusts in mail no provider stamped (above);
 *   `warn` when it would be refused and carries no such sign, when it would be refused but the
 *   latest reply the judge accepted still passes (the config is not the cause; never for such a
 *   stamp), when its From is not the agent's (a stranger's mail, or a wrong `agents[].address`:
 *   doctor cannot tell), or when no setting can make it pass and the config trusts nothing in it
 *   (above); else `ok` (also when there is none yet)
 */
export async function checkLatestTaggedMail(config: Config, resolver?: DnsResolver): Promise<Check> {
  const name = 'latest agent mail';
  const path = config.store.path;
  if (!existsSync(path)) return { name, status: 'ok', detail: 'no store yet; once the agent has replied, doctor judges its latest mail here' };
  const store = Store.open(path, { readOnly: true });
  try {
    const row: LedgerRow | undefined = store.ledger.latestTaggedWithRaw();
    const raw = row ? store.ledger.raw(row.id) : null;
    if (!row || !raw) return { name, status: 'ok', detail: 'no tagged mail from an agent in the ledger yet; once the agent has replied, doctor judges its latest mail here' };
    const again = readAgain(config);
    const { basis, ...judged } = await judgeRow(config, store, row, raw, resolver, again);
    // A forgery made the latest: the agent's own mail before it is what shows the config (attack review 10, F3).
    if (basis === 'not-the-agents') {
      const before = await agentsMailBefore(config, store, row, resolver, again);
      if (before?.status === 'fail') return { name, status: 'fail', detail: `${judged.detail}; but the agent's mail before it, ${before.detail}`, ...(before.fix ? { fix: before.fix } : {}) };
    }
    // A stamp the config trusts in mail no provider stamped: no reply elsewhere clears the config.
    // A warning that the config is not the cause stands only while the latest accepted reply passes.
    const notTheConfig = basis === 'not-the-config' || basis === 'not-the-agents';
    if (basis === 'forgeable-trust' || (judged.status !== 'fail' && !notTheConfig)) return { name, ...judged };
    const accepted = store.ledger.latestAcceptedWithRaw();
    const acceptedRaw = accepted && accepted.id !== row.id ? store.ledger.raw(accepted.id) : null;
    const earlier = accepted && acceptedRaw ? await judgeRow(config, store, accepted, acceptedRaw, resolver, again) : null;
    // "Nothing in the config needs changing" is not said while the agent's accepted reply fails now.
    if (notTheConfig) {
      return earlier?.status === 'fail' ? { name, status: 'fail', detail: `${judged.detail}; but the latest reply accepted, ${earlier.detail}`, ...(earlier.fix ? { fix: earlier.fix } : {}) } : { name, ...judged };
    }
    // Anyone can send mail that names the agent and a task: when the agent's latest accepted reply
    // still passes with this config, the config is not what refuses the latest mail.
    if (accepted && earlier?.status === 'ok') {
      return {
        name,
        status: 'warn',
        detail: `${judged.detail}; ledger #${accepted.id} (${accepted.verdict}), the latest reply accepted, passes with this config`,
        fix: 'the config is not the cause: the refused mail did not come as the agent\'s replies do (a forgery, or mail sent another way); nothing to change here',
      };
    }
    return { name, ...judged };
  } finally {
    store.close();
  }
}

/**
 * How many tagged mails before the latest doctor judges, newest first, to find the newest that
 * carries a sign of being the agent's when the latest carries none: enough for a few forgeries
 * sent after a genuine reply, few enough that a flood of them costs doctor at most this many
 * judgements (each may read its mail again from the mailbox and look DKIM keys up).
 */
const LOOK_BACK = 10;

/**
 * The judgement of the newest tagged mail before `latest` that carries a sign of being the agent's
 * (src/cli/doctor-agent-sign.ts), within {@link LOOK_BACK} rows; null when none does. Anyone who
 * can mail the mailbox can make a forgery the latest tagged mail: judged alone, it hid a genuine
 * reply before it that the config refuses (attack review 10, F3).
 */
async function agentsMailBefore(config: Config, store: Store, latest: LedgerRow, resolver: DnsResolver | undefined, again: ReadAgain): Promise<(Omit<Check, 'name'> & { basis?: Basis }) | null> {
  for (const row of store.ledger.taggedWithRaw(LOOK_BACK + 1)) {
    if (row.id >= latest.id) continue;
    const raw = store.ledger.raw(row.id);
    if (!raw) continue;
    const judged = await judgeRow(config, store, row, raw, resolver, again);
    if (judged.basis !== 'not-the-agents') return judged;
  }
  return null;
}

/** What the mail's own Received fields prove of a mail no config can find a border in (src/uplink/unbordered.ts). */
const ROUTES: Record<Unbordered, string> = {
  'no-received': 'it never passed a mail server: it has no Received field, which every server that takes mail in adds (a file written into the folder by hand or by a local program)',
  'inside-only': 'it never came in from outside: each of its Received fields names a loopback or private sender address (mail sent on this machine or its network)',
};

/**
 * The trusted stamp of `fields` (the border rule with `profile`: src/uplink/border.ts) when it
 * holds a `dkim=pass` while the header block holds no DKIM-Signature field: a provider verified a
 * signature (RFC 8601 §2.7.1) that the mail does not carry, so the stamp the config trusted is not
 * one a provider wrote on this mail. Null otherwise.
 * @returns the border rule's account of the trusted fields (`TrustOutcome.reason`)
 */
function stampWithoutSignature(fields: readonly HeaderField[], profile: ProviderProfile): string | null {
  if (fieldsNamed(fields, 'DKIM-Signature').length > 0) return null;
  const trust = findTrustedResults(fields, profile);
  return trust.ok && trust.results.dkim.some((r) => r.result === 'pass') ? trust.reason : null;
}

/** The words and the fix of a stamp the config trusts in mail no provider stamped ({@link checkLatestTaggedMail}). */
function forgeableTrust(config: Config, agent: AgentConfig | undefined): { words: string; fix: string } {
  return {
    words: `the config trusts a stamp a hand-made or forged mail can carry (provider ${config.mailbox.provider}), so this mail cannot show the trust settings are right`,
    fix: `check that [mailbox] provider, authserv_id and border_host trust only what your provider writes where its MX takes mail in from outside: run ${detect(config, agent)} on a genuine reply and set what it prints; if you wrote this mail into the folder yourself with a copied stamp, a2a-mailbridge demo is the real test`,
  };
}

/** The `provider detect` command line for the agent (its address, or a placeholder). */
function detect(config: Config, agent: AgentConfig | undefined): string {
  return commandLine(config.file, `provider detect --from ${agent ? shellWord(agent.address) : '<agent address>'}`);
}

/**
 * Why judgeRow's outcome holds: the config trusts no stamp in a mail no setting can pass; or trusts
 * one a mail no provider stamped carries; or the refused mail carries no sign of being the agent's.
 */
type Basis = 'not-the-config' | 'forgeable-trust' | 'not-the-agents';

/** The fix of such a mail: nothing to change here, and what a real test is. */
const NOT_THE_CONFIG =
  'nothing in the config needs changing: no setting makes such a mail pass; for a real test run a2a-mailbridge demo (the whole round trip), or wait for a genuine reply from the agent';

/**
 * One ledger row's mail judged again with `config` (gates 3–7; never committed): whether it passes,
 * and when not, why and what to change.
 */
async function judgeRow(config: Config, store: Store, row: LedgerRow, kept: Buffer, resolver: DnsResolver | undefined, again: ReadAgain): Promise<Omit<Check, 'name'> & { basis?: Basis }> {
  const what = `ledger #${row.id} (${row.verdict})`;
  // Mail refused before its body was read keeps only its header block in the ledger: read whole
  // again from the mailbox (read-only), it is judged as the bridge judged it, DKIM verified; a
  // genuine reply refused by a wrong provider setting then fails doctor (attack review 10, F2).
  const whole = kept.length < row.size ? await again(row, kept) : null;
  const raw = whole ?? kept;
  const rules = judgeRulesOf(config);
  // The ledger holds these very bytes (and their signature): gate 1 is not asked. The decision
  // is made, never committed.
  const noLedger = { seenDigest: () => false, authenticatedWith: () => undefined, messageIdApplied: () => false };
  const msg = { raw, size: row.size, tooLarge: false, receivedAt: row.receivedAt ?? null };
  // Only the first bytes were kept (refused mail): the gates that read the header block decide,
  // local DKIM verification (which reads the body) cannot be asked.
  const partial = raw.length < row.size;
  const d: Decision | null = partial
    ? judgeHeaderBlock(msg, rules, { ...noLedger, task: () => undefined }, { taskOnHeaders: false })
    : await judgeMessage<Decision>(msg, {
        rules,
        resolver: resolver ?? makeResolver(config.dnsServers),
        now: Date.now,
        store: {
          ...noLedger,
          task: (id) => {
            const task = store.tasks.get(id);
            return task && { task, turn: store.turns.get(task.id, task.turn) };
          },
        },
        settle: (decide) => decide(),
        taskOnHeaders: false,
      });
  if (d === null) {
    return { status: 'ok', detail: `${what} passes gates 3–7 on its header block with provider ${config.mailbox.provider} (the ledger kept ${raw.length} of its ${row.size} bytes, too few for local DKIM verification)` };
  }
  // A decision past gate 7 names the signature that authenticated the mail. A deferral (DNS did
  // not answer for the key) is a refusal until it does.
  if (d.kind === 'apply' || d.kind === 'late' || (d.kind === 'refuse' && d.signature !== null)) {
    return { status: 'ok', detail: `${what} passes gates 3–7 with provider ${config.mailbox.provider}` };
  }
  if (d.kind === 'refuse' && d.verdict === 'no-task-id') return { status: 'skip', detail: `${what}: ${d.reason}`, fix: 'no configured agent tag in it' };
  // Its ledger row names the task (its first 16 KiB carry the tag), but no gate read its fields.
  if (d.kind === 'refuse' && (d.verdict === 'too-large-header' || d.verdict.startsWith('unreadable:'))) {
    return { status: 'skip', detail: `${what}: ${d.reason}`, fix: 'its header block cannot be read as one, so no provider setting changes its verdict' };
  }
  const verdict = d.kind === 'refuse' ? d.verdict : 'auth:dkim-unverified';
  const agent = d.kind === 'refuse' ? d.tag?.agent : config.agents.find((a) => row.taskId !== null && row.agent === a.name);
  // Anyone can send mail naming a task: a From that is not the agent's is a stranger's mail as
  // often as a wrong agents[].address, and doctor cannot tell which, so it warns (fresh-user trial).
  // Gate 3 (a field repeated, too many signatures) refuses such mail whoever sent it, under any
  // setting: a mail changed on its way, or one built from the agent's own (attack review 10, F4).
  if (verdict === 'auth:duplicate-header') {
    return { status: 'warn', detail: `${what} would be refused: ${d.reason}`, fix: "no setting changes this verdict: gate 3 refuses a mail whose From, Subject, Date or Message-ID is missing, repeated or malformed, or that has more than 8 DKIM-Signature fields, whoever sent it; if the agent's replies come so, its mail software is what must change" };
  }
  if (verdict === 'auth:from-mismatch') {
    const address = agentKey(config, agent, 'address', agent?.address);
    return { status: 'warn', detail: `${what} would be refused: ${d.reason}`, fix: `if that mail was the agent's reply, set ${address} to the From the agent sends with; if it was not, it is someone else's mail, refused as it should be, and nothing needs to change` };
  }
  // Mail in which no provider setting can find a border, by its own Received fields (a file put
  // into the Maildir by hand, or mail sent on this machine): the config is not the cause, unless it
  // carries a stamp the config would trust at a border (checkLatestTaggedMail says why).
  const route = d.kind === 'refuse' && d.verdict === 'auth:no-border' ? unbordered(d.message.fields) : null;
  if (route) {
    const lookalikes = stampsTrustedById(d.message.fields, rules.profile).map((f) => `#${f.index}`);
    if (lookalikes.length === 0) return { status: 'warn', detail: `${what} would be refused: ${d.reason}; ${ROUTES[route]}`, fix: NOT_THE_CONFIG, basis: 'not-the-config' };
    const f = forgeableTrust(config, agent);
    return { status: 'fail', detail: `${what} would be refused: ${d.reason}; ${ROUTES[route]}; yet it carries Authentication-Results ${lookalikes.join(', ')} that the config would trust at a border: ${f.words}`, fix: f.fix, basis: 'forgeable-trust' };
  }
  const unsigned = d.kind === 'refuse' && d.verdict === 'auth:dkim-unaligned' ? stampWithoutSignature(d.message.fields, rules.profile) : null;
  if (unsigned !== null) {
    const f = forgeableTrust(config, agent);
    return { status: 'fail', detail: `${what} would be refused: ${d.reason}; the config trusted its stamp (${unsigned}), which says a DKIM signature passed, but it holds no DKIM-Signature at all: no provider wrote that stamp on this mail, and ${f.words}`, fix: f.fix, basis: 'forgeable-trust' };
  }
  // Mail that carries no sign of being the agent's (src/cli/doctor-agent-sign.ts): anyone who can
  // send mail to the mailbox can make such a mail the latest, so it cannot show the config wrong.
  const sign = agent ? await agentSign({ fields: d.message.fields, raw, partial, receivedAt: msg.receivedAt }, agent, rules.profile, resolver ?? makeResolver(config.dnsServers)) : null;
  if (agent && sign && !sign.sign) {
    return {
      status: 'warn',
      detail: `${what}: a mail tagged as agent ${agent.name}'s reply was refused, and it carries no sign that it is the agent's (${sign.text}); the refusal, quoting the mail's headers: ${JSON.stringify(d.reason)}`,
      fix: sign.unverified
        ? `nothing to change if it is not the agent's: anyone can send mail naming the agent and its task. If it is the agent's reply, the config may be what refuses it: ${detect(config, agent)} shows what your provider stamps on it`
        : `nothing to change for this mail: anyone can send mail naming the agent and its task, and the gates refuse it as they should; doctor judges the agent's next reply once it is the latest. If the agent did send it, check its DKIM signing (${agentKey(config, agent, 'dkim_domain', agent.dkimDomain)})`,
      basis: 'not-the-agents',
    };
  }
  const detected = detectProvider(raw);
  const lines = configLines(detected);
  const gate5 = /^gate 5/.test(d.reason);
  const fix =
    detected.preset && (detected.preset !== config.mailbox.provider || detected.preset === 'self-hosted') && gate5
      ? `this mail is stamped like ${detected.preset}: set in [mailbox] ${lines.join(', ')} (${detect(config, agent)} explains)`
      : gate5
        ? `run ${detect(config, agent)} to see what your provider stamps`
        : mailFix(verdict, agent, config);
  return { status: 'fail', detail: `${what} would be refused: ${d.reason}`, fix };
}

/** Reads a ledger row's message whole again from the configured mailbox ({@link readAgain}). */
type ReadAgain = (row: LedgerRow, kept: Buffer) => Promise<Buffer | null>;

/**
 * How doctor reads a row's message whole from the configured mailbox (src/uplink/message-by-source.ts;
 * a Maildir listed once for the whole run): its bytes, or null when they cannot be had — no longer
 * there, another message now, or the mailbox unreachable — the mail is then judged on the header
 * block the ledger kept, as before.
 */
function readAgain(config: Config): ReadAgain {
  const m = config.mailbox;
  const mailbox: SourceMailbox = m.kind === 'imap' ? { kind: 'imap', folder: m.folder!, imap: m.imap!, auth: () => imapAuth(m.imap!) } : { kind: 'maildir', folder: m.maildirPath! };
  const read = sourceReader(mailbox, m.maxMessageBytes);
  return async (row, kept) => {
    try {
      return await read(row.source, { size: row.size, kept });
    } catch {
      return null;
    }
  };
}

/**
 * The fix for a mail whose provider stamp was read but that gates 3, 6 or 7 refuse: the key of
 * the agent it names (as doctor names keys: `agents[0].dkim_domain`) with its value, when a key
 * can change the outcome (gate 7: the DKIM domain). Gate 4 (From) is a warning of its own.
 */
function mailFix(verdict: string, agent: AgentConfig | undefined, config: Config): string {
  const key = (k: string, v: string | undefined): string => agentKey(config, agent, k, v);
  const read = `the provider's stamp was read; the refusal is about the mail itself (${verdict})`;
  if (verdict.startsWith('auth:dkim')) return `${read}: check ${key('dkim_domain', agent?.dkimDomain)} and the agent's DKIM signing`;
  return `${read}; it is the agent's mail, not this config, that must change`;
}

/** An agent's config key as doctor names it, with its value (`agents[0].address (bot@agent.example)`), or `the agent's <key>` when no agent is known. */
function agentKey(config: Config, agent: AgentConfig | undefined, k: string, v: string | undefined): string {
  const i = agent ? config.agents.findIndex((a) => a.name === agent.name) : -1;
  return i >= 0 ? `agents[${i}].${k} (${v})` : `the agent's ${k}`;
}
