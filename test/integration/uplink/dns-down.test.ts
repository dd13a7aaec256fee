/**
 * Gate 7 when the DNS server does not answer (docs/architecture.md, "The gates": a key lookup
 * that failed temporarily is judged again for 24 h). A genuine reply of 256 KiB or more is
 * verified on the offload worker within a 10 s budget; it carries two DKIM signatures (the
 * agent's and a relay's): were mailauth's key lookups made within the budget, one after another at
 * 5 s each, they would use all of it. The judge, a real resolver (`makeResolver`, default timeouts) and a real UDP
 * socket that takes every query and answers none.
 */
import { createSocket, type Socket } from 'node:dgram';
import { dkimSign, type DKIMSignOptions } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeMessage, type Decision, type JudgeRules, type JudgeStore } from '../../../src/core/judge.js';
import { buildReplyMail, generateDkimKey, signatureB } from '../../../src/demo/reply-mail.js';
import { makeResolver } from '../../../src/uplink/dkim.js';
import type { TaskRow } from '../../../src/store/task-rows.js';
import type { TurnRow } from '../../../src/store/turns.js';
import { OFFLOAD_MIN_BYTES } from '../../../src/uplink/offload.js';
import { corpusAgent, loadManifest, profileOf } from '../../helpers/corpus.js';

const manifest = loadManifest();
const agent = corpusAgent(manifest);
const rules: JudgeRules = { agents: [agent], profile: profileOf(manifest), verifyDkim: true, dateSkewMs: manifest.dateSkewMs, maxMessageBytes: 10 * 1024 * 1024 };
// The tagged task is the agent's, with a turn: gate 8's task rule, asked on the header block before
// gate 7's verification, lets the reply through to it (only the agent and the turn's presence are read there).
const store: JudgeStore = { seenDigest: () => false, authenticatedWith: () => undefined, task: () => ({ task: { agent: agent.name } as TaskRow, turn: {} as TurnRow }), messageIdApplied: () => false };

/** A reply of `answerBytes` signed by the agent, then by a relay (esp.example), under the provider's stamp passing both. */
async function twoSignatureReply(answerBytes: number): Promise<Buffer> {
  const inner = await buildReplyMail({
    from: `Agent <${agent.address}>`, to: 'me@bridge.test', subject: `Re: [${agent.tag}:${manifest.liveTaskId}]`, token: '0'.repeat(32), status: 'done',
    answer: 'x'.repeat(answerBytes),
    dkim: { domain: agent.dkimDomain, selector: 's1', privateKeyPem: generateDkimKey().privateKeyPem },
  });
  const agentSignature = inner.subarray(0, inner.indexOf('\r\nFrom:') + 2).toString();
  const relay = await dkimSign(inner, { canonicalization: 'relaxed/relaxed', algorithm: 'rsa-sha256', signatureData: [{ signingDomain: 'esp.example', selector: 'e1', privateKey: generateDkimKey().privateKeyPem }] } as unknown as DKIMSignOptions);
  const stamp =
    `Authentication-Results: mx1.messagingengine.com;\r\n    dkim=pass header.d=${agent.dkimDomain} header.b=${signatureB(agentSignature).slice(0, 8)};\r\n    dkim=pass header.d=esp.example;\r\n    dmarc=pass (p=reject) header.from=${agent.dkimDomain}\r\n` +
    'Received: from mail.agent.example (mail.agent.example [192.0.2.25])\r\n\tby mx1.messagingengine.com (Postfix) with ESMTPS id X1\r\n\tfor <me@bridge.test>; Tue, 01 Dec 2026 10:00:00 +0000\r\n';
  return Buffer.concat([Buffer.from(stamp), Buffer.from(relay.signatures), inner]);
}

let silent: Socket;
const queries: string[] = [];
beforeAll(async () => {
  silent = createSocket('udp4');
  silent.on('message', (m) => queries.push(m.toString('latin1')));
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', () => resolve()));
});
afterAll(() => {
  silent?.close();
});

describe('DNS that does not answer, at gate 7', () => {
  it('defers a genuine reply of 256 KiB or more with two DKIM signatures, as a small one (was: auth:dkim-unverified, neutral, final)', async () => {
    const resolver = makeResolver([`127.0.0.1:${silent.address().port}`]);
    const raw = await twoSignatureReply(300_000);
    expect(raw.length).toBeGreaterThan(OFFLOAD_MIN_BYTES);
    const d = await judgeMessage<Decision>({ raw, size: raw.length, tooLarge: false, receivedAt: Date.now() }, { rules, resolver, now: () => Date.now(), store, settle: (f) => f() });
    expect(d).toMatchObject({ kind: 'defer', reason: expect.stringContaining('temperror') as unknown });
    // The agent's key was asked of the server (the lookup ran, and was not answered); the relay's
    // is not a candidate of gate 7, so it is not looked up (uplink/dkim.ts `verifyDkimLocally`).
    expect(queries.some((q) => q.includes('_domainkey'))).toBe(true);
  }, 30_000);
});
