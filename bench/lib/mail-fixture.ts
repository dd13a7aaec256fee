/**
 * Genuine replies for the uplink benchmarks, built by the project's own mail factory
 * (`buildReplyMail`): DKIM-signed with an RSA-2048 key by the agent's domain, then stamped by the
 * provider's MX (Fastmail style), exactly what the gates must accept. The DKIM key is served by an
 * in-process resolver function, so no DNS is measured. Tasks the replies answer are written into
 * a store through the store's own writes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { buildReplyMail, dkimTxtName, generateDkimKey } from '../../src/demo/reply-mail.js';
import type { Store } from '../../src/store/store.js';
import type { DnsResolver } from '../../src/uplink/dkim.js';

export const AGENT = { name: 'grok', tag: 'GROK', address: 'agent@agent.example', domain: 'agent.example' };
export const SELECTOR = 'bench2026';
export const PROVIDER = { mxHost: 'mx1.messagingengine.com', authservId: 'mx1.messagingengine.com', fromHost: 'mail.agent.example', fromIp: '192.0.2.25' };
export const MAILBOX_ADDRESS = 'me@bridge.test';

/** An answer of a realistic length (~1.2 KB) for the reply body. */
export const ANSWER = Array.from({ length: 12 }, (_, i) => `${i + 1}. Finding ${i + 1}: retrieval quality dominates generation quality when the corpus is noisy; see section ${i + 3}.`).join('\n');

export interface DkimFixture {
  privateKeyPem: string;
  /** Serves `<selector>._domainkey.<domain>` TXT from memory (chunks of ≤255 characters, as DNS does). */
  resolver: DnsResolver;
}

export function dkimFixture(): DkimFixture {
  const key = generateDkimKey();
  const name = dkimTxtName(SELECTOR, AGENT.domain);
  const chunks = key.publicKeyTxt.match(/.{1,255}/g) ?? [];
  const resolver: DnsResolver = (qname, rrtype) => {
    if (qname.toLowerCase().replace(/\.$/, '') === name && rrtype === 'TXT') return Promise.resolve([chunks]);
    return Promise.reject(Object.assign(new Error(`queryTxt ENOTFOUND ${qname}`), { code: 'ENOTFOUND' }));
  };
  return { privateKeyPem: key.privateKeyPem, resolver };
}

export interface BenchTask {
  taskId: string;
  token: string;
}

/** A genuine `status: done` reply to `task`, as it sits in the mailbox after the provider accepted it. */
export function genuineReply(d: DkimFixture, task: BenchTask, date = new Date()): Promise<Buffer> {
  return buildReplyMail({
    from: `Grok Agent <${AGENT.address}>`,
    to: MAILBOX_ADDRESS,
    subject: `Re: your job [${AGENT.tag}:${task.taskId}]`,
    date,
    token: task.token,
    status: 'done',
    answer: ANSWER,
    dkim: { domain: AGENT.domain, selector: SELECTOR, privateKeyPem: d.privateKeyPem },
    provider: PROVIDER,
  });
}

/**
 * Inserts `n` WORKING tasks (task, turn with a live token accepted a minute ago, the caller's ask)
 * in one transaction, as `submit` + an accepted dispatch leave them.
 */
export function insertWorkingTasks(store: Store, n: number, now = Date.now()): BenchTask[] {
  const out: BenchTask[] = [];
  store.tx((db) => {
    for (let i = 0; i < n; i++) {
      const taskId = randomUUID();
      const token = randomBytes(16).toString('hex');
      const createdAt = now - 60_000;
      const contextId = `ctx-${randomBytes(8).toString('hex')}`;
      db.tasks.insert({ id: taskId, agent: AGENT.name, contextId, state: 'WORKING', stateReason: 'the webhook was accepted', failedBy: null, turn: 1, caller: 'a2a:bench', createdAt, updatedAt: createdAt, deadlineAt: now + 3600_000 });
      db.turns.insert({
        taskId,
        turn: 1,
        ask: 'Survey the 2025 papers on retrieval-augmented generation.',
        replyToken: token,
        deadlineAt: now + 3600_000,
        dispatchId: `msg_${randomBytes(16).toString('hex')}`,
        envelope: Buffer.from('{}'),
        dispatchState: 'accepted',
        nextAttemptAt: null,
        acceptedAt: createdAt,
        replyStatus: null,
        replyText: null,
        replyLedgerId: null,
        repliedAt: null,
        createdAt,
      });
      db.messages.insert({ agent: AGENT.name, messageId: randomBytes(16).toString('hex'), taskId, contextId, role: 'user', kind: 'ask', turn: 1, text: 'Survey the 2025 papers on retrieval-augmented generation.', contentSha256: '0'.repeat(64), createdAt });
      out.push({ taskId, token });
    }
  });
  return out;
}

/** The bridge config (TOML) for an IMAP mailbox on a local Dovecot; secrets come from makeConfigDir. */
export function imapToml(o: { port: number; user: string; folder: string; storePath: string }): string {
  return `
[server]
listen = "127.0.0.1:0"
bearer_file = "bearer"

[store]
path = "${o.storePath}"

[mailbox]
kind = "imap"
address = "${MAILBOX_ADDRESS}"
folder = "${o.folder}"
check_interval_s = 0
[mailbox.imap]
host = "127.0.0.1"
port = ${o.port}
tls = false
user = "${o.user}"
password_file = "imap-password"
timeout_s = 120

[[agents]]
name = "${AGENT.name}"
address = "${AGENT.address}"
[agents.webhook]
url = "http://127.0.0.1:9/hook"
auth = "both"
bearer_file = "webhook-bearer"
secret_file = "webhook-secret"
`;
}
