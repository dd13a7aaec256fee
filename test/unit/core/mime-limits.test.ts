/**
 * A genuine reply (signed with the agent's key, stamped by the provider) whose MIME structure the
 * parser refuses: mailparser stops at 1,000 MIME parts and at a part header over 1 MiB (its
 * splitter's limits). The body was then not read, and the ledger must say so — by its verdict
 * (`unparsed:<cap>`, what the caller's status names) and its reason — not `no-token`, which sends
 * the operator looking for a fault in the agent's reply block.
 * Judged by `intake` (the code a mailbox check runs) against a real store; DKIM verified locally.
 */
import { describe, expect, it } from 'vitest';
import { envelope, mime, sign } from '../../fixtures/world/compose.js';
import { DIRECT, deliver } from '../../fixtures/world/delivery.js';
import { LIVE_TASK, LIVE_TOKEN, T0, tag } from '../../fixtures/world/identities.js';
import { AGENT_SIGNER } from '../../fixtures/world/keys-zone.js';
import { corpusAgent, loadManifest, loadZone, profileOf, zoneResolver } from '../../helpers/corpus.js';
import { corpusStore } from '../../helpers/corpus-store.js';

const manifest = loadManifest();
const setting = { agents: [corpusAgent(manifest)], profile: profileOf(manifest), resolver: zoneResolver(loadZone().records) };
const block = `reply_token: ${LIVE_TOKEN}\r\nstatus: done\r\n---\r\nThe answer.\r\n`;

/** The agent's multipart/mixed reply: the reply block, then `files` one-byte attachments, each with header `extra`. */
async function reply(n: number, files: number, extra = ''): Promise<Buffer> {
  const date = new Date(T0 + 60_000 + n * 1000);
  let body = `--B\r\nContent-Type: text/plain\r\n\r\n${block}`;
  for (let i = 0; i < files; i++) body += `--B\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="f${i}"${extra}\r\n\r\nx\r\n`;
  body += '--B--\r\n';
  const raw = mime([...envelope({ date, messageId: `<mime-limits-${n}@agent.example>`, subject: `Re: the job ${tag(LIVE_TASK)}` }), ['Content-Type', 'multipart/mixed; boundary="B"']], body);
  return deliver(await sign(raw, AGENT_SIGNER, date), DIRECT(new Date(date.getTime() + 2000)));
}

/** What the corpus store's intake (the path a mailbox check runs) records for `raw`, on a fresh store. */
async function taken(raw: Promise<Buffer>) {
  const s = corpusStore(manifest, setting);
  try {
    return await s.take(await raw);
  } finally {
    s.close();
  }
}

describe('a genuine reply whose MIME structure the parser refuses', () => {
  it('1,000 attachments: refused as not read, the verdict and the reason naming the parser limit (was: no-token)', async () => {
    const out = await taken(reply(1, 1000));
    expect(out).toMatchObject({ kind: 'recorded', verdict: 'unparsed:parts' });
    expect(out.kind === 'recorded' && out.reason).toBe('gate 9: the body was not read: the MIME parser stops at 1,000 MIME parts (Max allowed child nodes exceeded)');
  });

  it('an attachment whose part header is over 1 MiB: refused as not read, naming the limit (was: no-token)', async () => {
    const out = await taken(reply(2, 1, `\r\nX-Pad: ${'p'.repeat(1100 * 1024)}`));
    expect(out).toMatchObject({ kind: 'recorded', verdict: 'unparsed:part-header' });
    expect(out.kind === 'recorded' && out.reason).toBe('gate 9: the body was not read: the MIME parser stops at a part header over 1 MiB (Max header size for a MIME node exceeded)');
  });

  it('at the limit, 998 attachments beside the text part (1,000 MIME parts with the multipart): applied; one more is unparsed:parts', async () => {
    expect(await taken(reply(4, 998))).toMatchObject({ kind: 'recorded', verdict: 'applied:done' });
    expect(await taken(reply(5, 999))).toMatchObject({ kind: 'recorded', verdict: 'unparsed:parts' });
  });

  it('below the limit, 150 attachments: applied, the first 100 kept and the rest refused with a note (docs/agent-text.md)', async () => {
    const out = await taken(reply(3, 150));
    expect(out).toMatchObject({ kind: 'recorded', verdict: 'applied:done' });
    const d = out.kind === 'recorded' ? out.decision : null;
    expect(d?.kind === 'refuse' ? null : d?.reply.attachments.length).toBe(150);
  });
});
