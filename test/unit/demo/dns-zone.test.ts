import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import * as dnsPacket from 'dns-packet';
import { afterEach, describe, expect, it } from 'vitest';
import { type DnsZone, splitTxt, startDnsZone } from '../../../src/demo/dns-zone.js';

// This unit test binds one UDP socket on 127.0.0.1 (allowed for this file by the brief): it is the
// only way to prove a stock `Resolver` with `setServers` can read the zone.

const KEY = `v=DKIM1; k=rsa; p=${'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'.padEnd(392, 'A')}`;
const NAME = 'demo._domainkey.agent.example';

let zone: DnsZone | undefined;
afterEach(async () => {
  await zone?.close();
  zone = undefined;
});

function resolverFor(z: DnsZone): Resolver {
  const r = new Resolver({ timeout: 1000, tries: 1 });
  r.setServers([z.address]);
  return r;
}

/** Sends raw bytes and resolves with the first datagram back, or null after `ms`. */
function rawExchange(z: DnsZone, msg: Buffer, ms = 300): Promise<Buffer | null> {
  const s = createSocket('udp4');
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      s.close();
      resolve(null);
    }, ms);
    s.on('message', (m) => {
      clearTimeout(t);
      s.close();
      resolve(m);
    });
    s.send(msg, z.port, z.host);
  });
}

describe('splitTxt', () => {
  it('cuts at 255 bytes without splitting a UTF-8 character', () => {
    const chunks = splitTxt(`${'a'.repeat(254)}é${'b'.repeat(300)}`);
    expect(chunks.map((c) => c.length)).toEqual([254, 255, 47]);
    expect(Buffer.concat(chunks).toString()).toBe(`${'a'.repeat(254)}é${'b'.repeat(300)}`);
  });
});

describe('startDnsZone', () => {
  it('serves a long TXT value in ≤255-byte chunks that a node Resolver joins back', async () => {
    zone = await startDnsZone([{ name: NAME, type: 'TXT', data: KEY }]);
    expect(zone.address).toBe(`127.0.0.1:${zone.port}`);
    const answers = await resolverFor(zone).resolveTxt(NAME);
    expect(answers).toHaveLength(1);
    expect(answers[0]!.map((c) => Buffer.byteLength(c))).toEqual([255, KEY.length - 255]);
    expect(answers[0]!.join('')).toBe(KEY);
  });

  it('answers case-insensitively and returns every record of a name, chunks as given', async () => {
    zone = await startDnsZone([
      { name: 'agent.example', type: 'TXT', data: 'v=spf1 -all' },
      { name: 'agent.example', type: 'TXT', data: ['part one ', 'part two'] },
    ]);
    const answers = await resolverFor(zone).resolveTxt('AGENT.Example');
    expect(answers.map((a) => a.join('')).sort()).toEqual(['part one part two', 'v=spf1 -all']);
  });

  it('says NXDOMAIN (ENOTFOUND) for an unknown name in the zone and NODATA (ENODATA) for an empty one', async () => {
    zone = await startDnsZone([{ name: NAME, type: 'TXT', data: KEY }]);
    const r = resolverFor(zone);
    await expect(r.resolveTxt('other._domainkey.agent.example')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(r.resolveTxt('_domainkey.agent.example')).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(r.resolve4(NAME)).rejects.toMatchObject({ code: 'ENODATA' });
    expect(zone.queries.map((q) => q.rcode)).toEqual(['NXDOMAIN', 'NOERROR', 'NOERROR']);
  });

  it('refuses names outside its zones', async () => {
    zone = await startDnsZone([{ name: NAME, type: 'TXT', data: KEY }]);
    await expect(resolverFor(zone).resolveTxt('demo._domainkey.evil.example')).rejects.toMatchObject({ code: 'EREFUSED' });
  });

  it('survives malformed packets: short junk is dropped, a bad body gets FORMERR, then it still answers', async () => {
    zone = await startDnsZone([{ name: NAME, type: 'TXT', data: KEY }]);
    expect(await rawExchange(zone, Buffer.from([1, 2, 3]))).toBeNull();
    const junk = Buffer.concat([Buffer.from([0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0]), Buffer.from([0x3f, 0x41])]);
    const formerr = await rawExchange(zone, junk);
    expect(formerr).not.toBeNull();
    const decoded = dnsPacket.decode(formerr!) as dnsPacket.DecodedPacket & { rcode: string; id: number };
    expect(decoded.id).toBe(0xabcd);
    expect(decoded.rcode).toBe('FORMERR');
    // A response packet is never answered (no reflection loops).
    const response = dnsPacket.encode({ type: 'response', id: 7, questions: [{ type: 'TXT', name: NAME }] });
    expect(await rawExchange(zone, response)).toBeNull();
    expect((await resolverFor(zone).resolveTxt(NAME))[0]!.join('')).toBe(KEY);
  });

  it('sets TC and drops the answers when the response does not fit the UDP limit', async () => {
    zone = await startDnsZone([{ name: NAME, type: 'TXT', data: 'x'.repeat(600) }]);
    const query = dnsPacket.encode({ type: 'query', id: 9, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'TXT', name: NAME }] });
    const reply = dnsPacket.decode((await rawExchange(zone, query))!);
    expect(reply.flag_tc).toBe(true);
    expect(reply.answers).toHaveLength(0);
  });

  it('falls back to TCP on the same port when the UDP answer is truncated', async () => {
    const longName = 'mailbridge-demo-2048._domainkey.agent.example';
    zone = await startDnsZone([{ name: longName, type: 'TXT', data: KEY }]);
    const answers = await resolverFor(zone).resolveTxt(longName);
    expect(answers[0]!.join('')).toBe(KEY);
    // The same question twice: once truncated over UDP, once whole over TCP.
    expect(zone.queries.filter((q) => q.name === longName)).toHaveLength(2);
  });

  it('throws on misuse before binding', async () => {
    await expect(startDnsZone([{ name: 'a..b', type: 'TXT', data: 'x' }])).rejects.toThrow(TypeError);
    await expect(startDnsZone([{ name: 'a.b', type: 'TXT', data: ['y'.repeat(256)] }])).rejects.toThrow(RangeError);
  });
});
