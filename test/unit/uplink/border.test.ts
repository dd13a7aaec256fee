import { describe, expect, it } from 'vitest';
import { FASTMAIL_PROFILE, findTrustedResults, isInternalIp, matchesWhole, parseReceived, type TrustOutcome } from '../../../src/uplink/border.js';
import { parseHeaders } from '../../../src/uplink/raw-headers.js';

const fields = (...lines: string[]) => parseHeaders(Buffer.from(`${lines.join('\r\n')}\r\n\r\nbody\r\n`, 'utf8'));

function ok(outcome: TrustOutcome): Extract<TrustOutcome, { ok: true }> {
  if (!outcome.ok) throw new Error(`expected ok, got ${outcome.verdict}: ${outcome.reason}`);
  return outcome;
}

// The external hop the provider's MX writes (Postfix form, RFC 5321 §4.4).
const EXTERNAL =
  'Received: from mail.agent.example (mail.agent.example [192.0.2.25])\r\n\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits))\r\n\tby mx1.messagingengine.com (Postfix) with ESMTPS id 281071EA00F1\r\n\tfor <me@example.com>; Tue, 29 Sep 2026 14:02:10 -0400 (EDT)';
const PASS_AR =
  'Authentication-Results: mx1.messagingengine.com;\r\n    dkim=pass (2048-bit rsa key sha256) header.d=agent.example\r\n      header.i=@agent.example header.b=AbCdEf12 header.a=rsa-sha256 header.s=s1;\r\n    dmarc=pass policy.published-domain-policy=reject (p=reject,d=none,d.eval=none)\r\n      header.from=agent.example;\r\n    spf=pass smtp.mailfrom=agent@agent.example smtp.helo=mail.agent.example';
const SENDER = ['DKIM-Signature: v=1; a=rsa-sha256; d=agent.example; s=s1; h=from; bh=x; b=AbCdEf12345', 'From: agent@agent.example', 'Subject: hi'];

/** The layout of a real Fastmail delivery: internal hops on top, several A-R fields, then the MX hop. */
const FASTMAIL_LAYOUT = [
  'Return-Path: <agent@agent.example>',
  'Received: from ams-compute-02.internal (ams-compute-02.internal [10.64.2.62])\r\n\t by slotai03m05 (Cyrus 3.13.7) with LMTPA;\r\n\t Tue, 29 Sep 2026 14:02:14 -0400',
  'Received: from phl-mx-04 ([10.202.2.203])\r\n  by ams-compute-02.internal (LMTPProxy); Tue, 29 Sep 2026 14:02:14 -0400',
  'Received: from phl-mx-04.messagingengine.com (localhost [127.0.0.1])\r\n\tby mailmx.phl.internal (Postfix) with ESMTP id A71211EA00E7\r\n\tfor <me@example.com>; Tue, 29 Sep 2026 14:02:11 -0400 (EDT)',
  'Received: from mailmx.phl.internal (localhost [127.0.0.1])\r\n    by phl-mx-04.messagingengine.com (Authentication Milter) with ESMTP\r\n    id 35022C783BF.281071EA00F1;\r\n    Tue, 29 Sep 2026 14:02:11 -0400',
  'ARC-Authentication-Results: i=1; phl-mx-04.messagingengine.com;\r\n    dkim=fail header.d=agent.example header.b=AbCdEf12',
  'X-ME-Authentication-Results: phl-mx-04.messagingengine.com;\r\n    x-tls=pass smtp.version=TLSv1.3 smtp.bits=256/256;\r\n    x-vs=transactional:account score=20 state=14',
  'Authentication-Results: phl-mx-04.messagingengine.com;\r\n    x-csa=none;\r\n    x-me-sender=none;\r\n    x-ptr=pass smtp.helo=mail.agent.example\r\n      policy.ptr=mail.agent.example',
  'Authentication-Results: phl-mx-04.messagingengine.com;\r\n    bimi=none (No BIMI records found)',
  'Authentication-Results: phl-mx-04.messagingengine.com;\r\n    arc=none (no signatures found)',
  'Authentication-Results: phl-mx-04.messagingengine.com;\r\n    dkim=pass (2048-bit rsa key sha256) header.d=agent.example\r\n      header.i=@agent.example header.b=AbCdEf12 header.a=rsa-sha256\r\n      header.s=s1 x-bits=2048;\r\n    dmarc=pass policy.published-domain-policy=reject\r\n      policy.applied-disposition=none policy.evaluated-disposition=none\r\n      (p=reject,d=none,d.eval=none) policy.policy-from=p\r\n      header.from=agent.example;\r\n    iprev=pass smtp.remote-ip=192.0.2.25 (mail.agent.example);\r\n    spf=pass smtp.mailfrom=agent@agent.example\r\n      smtp.helo=mail.agent.example',
  "Received-SPF: pass\r\n    (agent.example: Sender is authorized to use 'agent@agent.example' in 'mfrom' identity)\r\n    receiver=phl-mx-04.messagingengine.com; identity=mailfrom; client-ip=192.0.2.25",
  'Received: from mail.agent.example (mail.agent.example [192.0.2.25])\r\n\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits))\r\n\t(No client certificate requested)\r\n\tby phl-mx-04.messagingengine.com (Postfix) with ESMTPS id 281071EA00F1\r\n\tfor <me@example.com>; Tue, 29 Sep 2026 14:02:10 -0400 (EDT)',
  ...SENDER,
];

describe('parseReceived', () => {
  it.each([
    ['Postfix', 'from mail.agent.example (mail.agent.example [192.0.2.25]) by mx1.messagingengine.com (Postfix) with ESMTPS id X; Tue, 1 Jan 2030 00:00:00 +0000', { from: 'mail.agent.example', by: 'mx1.messagingengine.com', fromIps: ['192.0.2.25'] }],
    ['Postfix, TLS comment between', 'from a.example (unknown [198.51.100.7])\r\n\t(using TLSv1.3 (256/256 bits))\r\n\tby MX1.MessagingEngine.COM. (Postfix); date', { from: 'a.example', by: 'mx1.messagingengine.com', fromIps: ['198.51.100.7'] }],
    ['Fastmail LMTP', 'from phl-mx-04 ([10.202.2.203])\r\n  by ams-compute-02.internal (LMTPProxy); Tue, 29 Sep 2026', { from: 'phl-mx-04', by: 'ams-compute-02.internal', fromIps: ['10.202.2.203'] }],
    ['Exim', 'from mail.example.org ([203.0.113.5] helo=mx.example.org) by smtp.example.net with esmtps (Exim 4.96) id 1; date', { from: 'mail.example.org', by: 'smtp.example.net', fromIps: ['203.0.113.5'] }],
    ['address literal', 'from [203.0.113.5] (port=4321 helo=x) by mx1.messagingengine.com; date', { from: '[203.0.113.5]', by: 'mx1.messagingengine.com', fromIps: ['203.0.113.5'] }],
    ['IPv6 literal', 'from h.example (h.example [IPv6:2001:db8::25]) by mx1.messagingengine.com; date', { from: 'h.example', by: 'mx1.messagingengine.com', fromIps: ['2001:db8::25'] }],
    ['Microsoft bare IPv6', 'from EUR05-DB8-obe.outbound.protection.outlook.com (2603:10a6:20b:1a::1) by VI1PR.outlook.office365.com (2603:10a6:800:1::5) with Microsoft SMTP Server; date', { from: 'eur05-db8-obe.outbound.protection.outlook.com', by: 'vi1pr.outlook.office365.com', fromIps: ['2603:10a6:20b:1a::1'] }],
    ['no from', 'by 2002:a05:6a10:1234 with SMTP id x; Tue, 1 Jan 2030', { from: null, by: '2002:a05:6a10:1234', fromIps: [] }],
    ['qmail, "by" only in a comment', '(qmail 1234 invoked by uid 0); 1 Jan 2030', { from: null, by: null, fromIps: [] }],
    ['a "by" in a nested comment', 'from a.example (x (by evil) [192.0.2.1]) by b.example; date', { from: 'a.example', by: 'b.example', fromIps: ['192.0.2.1'] }],
    ['empty', '', { from: null, by: null, fromIps: [] }],
  ])('%s', (_name, value, expected) => {
    expect(parseReceived(value)).toEqual(expected);
  });

  it('collects every IP of the from clause, the sender-chosen HELO literal included', () => {
    expect(parseReceived('from [10.0.0.1] (unknown [203.0.113.9]) by mx1.messagingengine.com; d').fromIps).toEqual(['10.0.0.1', '203.0.113.9']);
  });
});

describe('isInternalIp and matchesWhole', () => {
  it.each([
    ['127.0.0.1', true], ['10.202.2.203', true], ['172.16.0.1', true], ['172.31.255.255', true], ['172.32.0.1', false],
    ['192.168.1.1', true], ['169.254.1.1', true], ['100.64.0.1', true], ['100.128.0.1', false], ['192.0.2.25', false],
    ['8.8.8.8', false], ['::1', true], ['fd00::1', true], ['fe80::1', true], ['2001:db8::1', false], ['::ffff:10.0.0.1', true],
    ['::ffff:192.0.2.1', false], ['not-an-ip', false],
  ])('%s internal: %s', (ip, internal) => {
    expect(isInternalIp(ip)).toBe(internal);
  });

  it('matches whole names only, whatever the pattern anchors or flags', () => {
    expect(matchesWhole(FASTMAIL_PROFILE.authservId, 'phl-mx-04.messagingengine.com')).toBe(true);
    expect(matchesWhole(FASTMAIL_PROFILE.authservId, 'MX1.MessagingEngine.com')).toBe(true);
    expect(matchesWhole(FASTMAIL_PROFILE.authservId, 'evilmessagingengine.com')).toBe(false);
    expect(matchesWhole(FASTMAIL_PROFILE.authservId, 'mx1.messagingengine.com.evil.test')).toBe(false);
    const loose = /mx\d\.example\.com/g;
    expect(matchesWhole(loose, 'mx1.example.com')).toBe(true);
    expect(matchesWhole(loose, 'mx1.example.com')).toBe(true);
    expect(matchesWhole(loose, 'evil-mx1.example.com')).toBe(false);
    expect(matchesWhole(loose, 'mx1.example.com.evil')).toBe(false);
  });
});

describe('findTrustedResults', () => {
  it('finds the border in a real Fastmail layout, below the internal hops, and merges the A-R fields', () => {
    const f = fields(...FASTMAIL_LAYOUT);
    const out = ok(findTrustedResults(f, FASTMAIL_PROFILE));
    expect(f[out.border]?.value).toContain('by phl-mx-04.messagingengine.com (Postfix)');
    expect(out.results).toEqual({
      dkim: [{ result: 'pass', headerD: 'agent.example', headerI: '@agent.example', headerB: 'AbCdEf12', headerS: 's1' }],
      dmarc: [{ result: 'pass', headerFrom: 'agent.example' }],
      spf: [{ result: 'pass' }],
      conflicts: [],
    });
    expect(out.reason).toMatch(/^border is Received #12 by phl-mx-04\.messagingengine\.com from mail\.agent\.example \[192\.0\.2\.25\]; trusted Authentication-Results #7 .*#10 /);
  });

  it('reads the simple layout: provider A-R, then the MX hop', () => {
    const out = ok(findTrustedResults(fields(PASS_AR, EXTERNAL, ...SENDER), FASTMAIL_PROFILE));
    expect(out.border).toBe(1);
    expect(out.results.dkim[0]).toMatchObject({ result: 'pass', headerD: 'agent.example' });
  });

  it('fails closed without any Received field', () => {
    const out = findTrustedResults(fields(PASS_AR, ...SENDER), FASTMAIL_PROFILE);
    expect(out).toMatchObject({ ok: false, verdict: 'auth:no-border' });
    expect(out.reason).toMatch(/no Received field/);
  });

  it('fails closed when no Received is by the provider, and names the hops seen', () => {
    const out = findTrustedResults(fields(PASS_AR, 'Received: from a.example (a.example [192.0.2.1]) by mx.other.example; d', ...SENDER), FASTMAIL_PROFILE);
    expect(out).toMatchObject({ ok: false, verdict: 'auth:no-border' });
    expect(out.reason).toContain('Received #1 by mx.other.example from a.example [192.0.2.1]');
  });

  it('a Received word holding a space other than U+0020 or a format character reaches the no-border reason escaped (attack review 6, F6)', () => {
    // The parser splits words on ASCII white space only, so NBSP, EM SPACE, IDEOGRAPHIC SPACE and an RLO stay in the `from` word.
    const hop = 'Received: from a.example\u00a0\u00a0\u2003applied:done\u3000\u202eevil (a.example [192.0.2.1]) by mx.other.example; d';
    const out = findTrustedResults(fields(PASS_AR, hop, ...SENDER), FASTMAIL_PROFILE);
    expect(out).toMatchObject({ ok: false, verdict: 'auth:no-border' });
    expect(out.reason).toContain('from a.example\\u{a0}\\u{a0}\\u{2003}applied:done\\u{3000}\\u{202e}evil [192.0.2.1]');
    expect(out.reason).not.toMatch(/[\p{Cf}\u00a0\u2003\u3000]/u);
  });

  it('does not take a lookalike by-host for the provider', () => {
    const hop = 'Received: from a.example (a.example [192.0.2.1]) by mx1.messagingengine.com.evil.test; d';
    expect(findTrustedResults(fields(PASS_AR, hop), FASTMAIL_PROFILE)).toMatchObject({ ok: false, verdict: 'auth:no-border' });
  });

  it('fails closed when every provider hop comes from inside the provider', () => {
    const hop = 'Received: from mailmx.phl.internal (localhost [127.0.0.1]) by phl-mx-04.messagingengine.com; d';
    expect(findTrustedResults(fields(PASS_AR, hop), FASTMAIL_PROFILE)).toMatchObject({ ok: false, verdict: 'auth:no-border' });
  });

  it('ignores forged A-R and forged provider hops below the border', () => {
    const providerSaysFail = 'Authentication-Results: mx1.messagingengine.com; dkim=none (no signatures found); dmarc=fail (p=reject) header.from=agent.example; spf=fail smtp.mailfrom=x@evil.test';
    const f = fields(
      providerSaysFail,
      'Received: from evil.test (evil.test [203.0.113.9]) by mx1.messagingengine.com (Postfix); d',
      PASS_AR, // forged by the sender
      'Received: from mail.agent.example (mail.agent.example [192.0.2.25]) by mx1.messagingengine.com (Postfix); d', // forged
      ...SENDER,
    );
    const out = ok(findTrustedResults(f, FASTMAIL_PROFILE));
    expect(out.border).toBe(1);
    expect(out.results.dkim).toEqual([{ result: 'none', headerD: null, headerI: null, headerB: null, headerS: null }]);
    expect(out.results.dmarc).toEqual([{ result: 'fail', headerFrom: 'agent.example' }]);
    expect(out.results.conflicts).toEqual([]);
  });

  it('is not fooled by a sender HELO naming a provider host or a private address', () => {
    for (const hop of [
      'Received: from mx2.messagingengine.com (unknown [203.0.113.9]) by mx1.messagingengine.com (Postfix); d',
      'Received: from [10.0.0.1] (unknown [203.0.113.9]) by mx1.messagingengine.com (Postfix); d',
    ]) {
      const f = fields('Authentication-Results: mx1.messagingengine.com; dmarc=fail header.from=agent.example', hop, PASS_AR, EXTERNAL, ...SENDER);
      const out = ok(findTrustedResults(f, FASTMAIL_PROFILE));
      expect(out.border).toBe(1);
      expect(out.results.dkim).toEqual([]);
      expect(out.results.dmarc).toEqual([{ result: 'fail', headerFrom: 'agent.example' }]);
    }
  });

  it('without any IP in the hop, takes a provider-named peer for an inside hop (the name rule)', () => {
    const inside = 'Received: from mx2.messagingengine.com by mx1.messagingengine.com; d';
    const outside = 'Received: from mail.agent.example by mx2.messagingengine.com; d';
    expect(ok(findTrustedResults(fields(PASS_AR, inside, outside), FASTMAIL_PROFILE)).border).toBe(2);
    expect(ok(findTrustedResults(fields(PASS_AR, 'Received: by mx1.messagingengine.com; d'), FASTMAIL_PROFILE)).border).toBe(1);
  });

  it.each(['evilmessagingengine.com', 'mx1.messagingengine.com.evil.test', 'messagingengine.com', 'mx.google.com'])(
    'does not trust an A-R stamped %s above the border',
    (id) => {
      const out = findTrustedResults(fields(`Authentication-Results: ${id}; dkim=pass header.d=agent.example; dmarc=pass`, EXTERNAL), FASTMAIL_PROFILE);
      expect(out).toMatchObject({ ok: false, verdict: 'auth:no-trusted-results' });
      expect(out.reason).toContain(`#0 (${id})`);
      expect(out.reason).toContain('border is Received #1 by mx1.messagingengine.com');
    },
  );

  it('fails closed when the only A-R are below the border', () => {
    expect(findTrustedResults(fields(EXTERNAL, PASS_AR, ...SENDER), FASTMAIL_PROFILE)).toMatchObject({ ok: false, verdict: 'auth:no-trusted-results' });
  });

  it('reports a dmarc disagreement between trusted fields as a conflict', () => {
    const f = fields('Authentication-Results: mx1.messagingengine.com; dmarc=fail header.from=agent.example', PASS_AR, EXTERNAL);
    const out = ok(findTrustedResults(f, FASTMAIL_PROFILE));
    expect(out.results.dmarc).toEqual([
      { result: 'fail', headerFrom: 'agent.example' },
      { result: 'pass', headerFrom: 'agent.example' },
    ]);
    expect(out.results.conflicts).toEqual(['dmarc disagrees: fail (Authentication-Results #0), pass (Authentication-Results #1)']);
    expect(out.reason).toContain('1 conflict:');
  });

  it('reports a dkim disagreement on the same header.d and header.b, but not on different signatures', () => {
    const fail = 'Authentication-Results: mx1.messagingengine.com; dkim=fail header.d=agent.example header.b=AbCdEf12';
    const other = 'Authentication-Results: mx1.messagingengine.com; dkim=fail header.d=agent.example header.b=ZZZZZZZZ';
    expect(ok(findTrustedResults(fields(fail, PASS_AR, EXTERNAL), FASTMAIL_PROFILE)).results.conflicts).toEqual([
      'dkim for header.d=agent.example header.b=AbCdEf12 disagrees: fail (Authentication-Results #0), pass (Authentication-Results #1)',
    ]);
    const out = ok(findTrustedResults(fields(other, PASS_AR, EXTERNAL), FASTMAIL_PROFILE));
    expect(out.results.conflicts).toEqual([]);
    expect(out.results.dkim.map((d) => d.result)).toEqual(['fail', 'pass']);
  });

  it('reports an spf disagreement on the same identity', () => {
    const f = fields('Authentication-Results: mx1.messagingengine.com; spf=softfail smtp.mailfrom=Agent@agent.example smtp.helo=mail.agent.example', PASS_AR, EXTERNAL);
    expect(ok(findTrustedResults(f, FASTMAIL_PROFILE)).results.conflicts).toEqual([
      'spf for smtp.mailfrom=Agent@agent.example disagrees: softfail (Authentication-Results #0), pass (Authentication-Results #1)',
    ]);
  });

  it('reports two different header.d values in one dkim result as a conflict', () => {
    const f = fields('Authentication-Results: mx1.messagingengine.com; dkim=pass header.d=agent.example header.d=evil.test', EXTERNAL);
    const out = ok(findTrustedResults(f, FASTMAIL_PROFILE));
    expect(out.results.conflicts).toEqual(['Authentication-Results #0: dkim has 2 different header.d values']);
  });

  it('reports an unparseable provider A-R as a conflict and ignores unparseable foreign ones', () => {
    const bad = 'Authentication-Results: mx1.messagingengine.com; dkim=pass header.d="agent.example';
    const foreign = 'Authentication-Results: spf=pass (sender IP is 192.0.2.1) smtp.mailfrom=x.com; dmarc=pass action=none header.from=x.com';
    const out = ok(findTrustedResults(fields(bad, foreign, PASS_AR, EXTERNAL), FASTMAIL_PROFILE));
    expect(out.results.conflicts).toEqual(['Authentication-Results #0 by mx1.messagingengine.com could not be parsed']);
    expect(out.results.dkim).toHaveLength(1);
    const only = findTrustedResults(fields(foreign, EXTERNAL), FASTMAIL_PROFILE);
    expect(only).toMatchObject({ ok: false, verdict: 'auth:no-trusted-results' });
  });

  it('dedupes identical results repeated across trusted fields', () => {
    const out = ok(findTrustedResults(fields(PASS_AR, PASS_AR, EXTERNAL), FASTMAIL_PROFILE));
    expect(out.results.dkim).toHaveLength(1);
    expect(out.results.dmarc).toHaveLength(1);
    expect(out.results.spf).toHaveLength(1);
    expect(out.results.conflicts).toEqual([]);
  });

  it('lower-cases header.d and header.from and drops a trailing dot', () => {
    const out = ok(findTrustedResults(fields('Authentication-Results: mx1.messagingengine.com; dkim=pass header.d=Agent.Example. header.b=AbCdEf12; dmarc=pass header.from=AGENT.example', EXTERNAL), FASTMAIL_PROFILE));
    expect(out.results.dkim[0]?.headerD).toBe('agent.example');
    expect(out.results.dmarc[0]?.headerFrom).toBe('agent.example');
  });

  it('uses a custom profile, and takes header.d from header.i when the provider writes only header.i', () => {
    const google = { authservId: /mx\.google\.com/i, borderHost: /mx\.google\.com/i };
    const f = fields(
      'Authentication-Results: mx.google.com; dkim=pass header.i=@agent.example header.s=s1 header.b=AbCdEf12; dmarc=pass (p=NONE) header.from=agent.example',
      'Received: from mail.agent.example (mail.agent.example. [192.0.2.25]) by mx.google.com with ESMTPS id x; d',
    );
    const out = ok(findTrustedResults(f, google));
    expect(out.results.dkim[0]).toEqual({ result: 'pass', headerD: 'agent.example', headerI: '@agent.example', headerB: 'AbCdEf12', headerS: 's1' });
  });
});

describe('the border parsers on hostile sizes', () => {
  // Linear: each takes well under a second on 2 MB; the test's own timeout is the guard.
  const MB2 = 2 * 1024 * 1024;
  it('a Received `from` clause of `[` without `]` (the IP pattern was quadratic)', () => {
    expect(parseReceived(`from ${'['.repeat(MB2)} by mx1.messagingengine.com`)).toMatchObject({ by: 'mx1.messagingengine.com', fromIps: [] });
    expect(parseReceived(`from x (${'['.repeat(MB2)}[192.0.2.1]) by y`).fromIps).toEqual(['192.0.2.1']);
  });
  it('a trusted field listing a dkim result per DKIM-Signature: duplicates found by key (the scan was quadratic)', () => {
    const n = 30_000;
    const results = Array.from({ length: n }, (_, i) => `; dkim=pass header.d=a${i % 15_000}.example header.b=abcdefgh`).join('');
    const fields = parseHeaders(Buffer.from(`Authentication-Results: mx1.messagingengine.com${results}\r\nReceived: from mail.agent.example (mail.agent.example [192.0.2.25]) by mx1.messagingengine.com\r\n\r\n`));
    const out = findTrustedResults(fields, FASTMAIL_PROFILE);
    expect(out.ok && out.results.dkim).toHaveLength(15_000);
  });
});
