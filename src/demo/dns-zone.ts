/**
 * A tiny authoritative DNS server for a static test zone, on loopback UDP with TCP on the same port
 * for answers too long for a datagram (the resolver's servers are configurable, which also lets
 * tests and the demo serve a test zone from loopback"). The bridge's local DKIM verifier looks
 * selector keys up through a `node:dns/promises` `Resolver` whose
 * `setServers([zone.address])` points here, exactly as it would at a real name server.
 *
 * What it answers (RFC 1035 §4.1.1 header codes, RFC 2308 negative answers):
 * - TXT for a known name: every record of that name, each value split into character-strings of
 *   at most 255 bytes (RFC 1035 §3.3.14; a DKIM 2048-bit key is ~410 bytes and must be split,
 *   RFC 6376 §3.6.2.2). The resolver joins the chunks back.
 * - a name in the zone that has no record of the asked type, or that only has names below it
 *   (`_domainkey.example.com` when `sel._domainkey.example.com` exists): NOERROR with no answer
 *   ("NODATA"; node reports `ENODATA`), with the zone's SOA in the authority section.
 * - a name in the zone that does not exist: NXDOMAIN (node reports `ENOTFOUND`), with the SOA.
 * - a name outside every zone: REFUSED. An opcode other than QUERY: NOTIMP. Not exactly one
 *   question: FORMERR. A packet that does not decode: FORMERR when it has a 12-byte header to
 *   echo the id from, otherwise dropped. Responses (QR set) are ignored, never answered.
 * - A UDP response over 512 bytes (or the EDNS payload size the query advertised, RFC 6891
 *   §6.2.5) is sent without answers and with the TC bit; the resolver then asks again over TCP on
 *   the same port (RFC 7766), where the whole answer is sent. This matters: Node 20's resolver
 *   sends no EDNS, dns-packet does not compress names, and a 2048-bit DKIM key under a selector
 *   name longer than ~35 characters no longer fits in 512 bytes.
 */
import { createSocket, type Socket } from 'node:dgram';
import { createServer, isIP, type Server as NetServer, type Socket as NetSocket } from 'node:net';
import * as dnsPacket from 'dns-packet';

/** One TXT record: `data` is the whole value (split into ≤255-byte chunks here) or its chunks. */
export interface ZoneRecord {
  name: string;
  type: 'TXT';
  data: string | string[];
}

export interface DnsZoneOptions {
  /** Loopback address to bind; default `127.0.0.1`. */
  host?: string;
  /** UDP and TCP port; default 0 (a port free for both). */
  port?: number;
  /**
   * Zone apexes this server is authoritative for. Default: the last two labels of every record's
   * name (`agent.example` for `demo._domainkey.agent.example`).
   */
  zones?: string[];
  /** TTL of every answer, in s; default 60. */
  ttlS?: number;
}

/** One query seen, in arrival order: the name as asked (case kept) and the type. */
export interface ZoneQuery {
  name: string;
  type: string;
  rcode: 'NOERROR' | 'NXDOMAIN' | 'REFUSED' | 'NOTIMP' | 'FORMERR';
}

export interface DnsZone {
  host: string;
  port: number;
  /** `127.0.0.1:<port>` (or `[::1]:<port>`), the form `Resolver#setServers` takes. */
  address: string;
  /** Every decodable query answered so far (FORMERR for undecodable ones with a header). */
  queries: ZoneQuery[];
  close(): Promise<void>;
}

const RCODE = { NOERROR: 0, FORMERR: 1, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
const MAX_CHUNK_BYTES = 255;
const UDP_LIMIT_BYTES = 512;

/** Lower-case, no trailing dot. */
function canonical(name: string): string {
  return name.replace(/\.$/, '').toLowerCase();
}

function checkName(name: string): string {
  const n = canonical(name);
  const labels = n.split('.');
  if (n.length === 0 || n.length > 253 || labels.some((l) => l.length === 0 || l.length > 63)) {
    throw new TypeError(`dns-zone: invalid name ${JSON.stringify(name)} (labels of 1..63 bytes, 253 in all)`);
  }
  return n;
}

/** Splits a value into character-strings of at most 255 bytes without cutting a UTF-8 character. */
export function splitTxt(value: string): Buffer[] {
  const out: Buffer[] = [];
  let current = '';
  for (const ch of value) {
    if (Buffer.byteLength(current + ch) > MAX_CHUNK_BYTES) {
      out.push(Buffer.from(current));
      current = '';
    }
    current += ch;
  }
  out.push(Buffer.from(current));
  return out;
}

function toChunks(r: ZoneRecord): Buffer[] {
  if (typeof r.data === 'string') return splitTxt(r.data);
  if (r.data.length === 0) throw new TypeError(`dns-zone: TXT record ${r.name} has no chunks`);
  return r.data.map((c) => {
    const b = Buffer.from(c);
    if (b.length > MAX_CHUNK_BYTES) throw new RangeError(`dns-zone: a TXT chunk of ${r.name} is ${b.length} bytes; at most 255`);
    return b;
  });
}

function formatAddress(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Starts the server and resolves once both sockets are bound.
 *
 * @throws TypeError / RangeError for an invalid name or an oversized explicit chunk (before binding).
 * @throws the bind error (e.g. EADDRINUSE) when a socket cannot be bound.
 */
export async function startDnsZone(records: ZoneRecord[], opts: DnsZoneOptions = {}): Promise<DnsZone> {
  const host = opts.host ?? '127.0.0.1';
  const ttl = opts.ttlS ?? 60;
  const byName = new Map<string, Buffer[][]>();
  for (const r of records) {
    if (r.type !== 'TXT') throw new TypeError(`dns-zone: only TXT records are served, got ${String(r.type)}`);
    const name = checkName(r.name);
    byName.set(name, [...(byName.get(name) ?? []), toChunks(r)]);
  }
  const zones = (opts.zones ?? [...byName.keys()].map((n) => n.split('.').slice(-2).join('.'))).map(checkName);
  const apexes = [...new Set(zones)].sort((a, b) => b.length - a.length);

  const zoneOf = (name: string): string | undefined => apexes.find((z) => name === z || name.endsWith(`.${z}`));
  const exists = (name: string, zone: string): boolean =>
    name === zone || [...byName.keys()].some((k) => k === name || k.endsWith(`.${name}`));

  const soa = (zone: string): dnsPacket.Answer => ({
    type: 'SOA',
    name: zone,
    ttl,
    data: {
      mname: `ns.${zone}`,
      rname: `hostmaster.${zone}`,
      serial: 1,
      refresh: 3600,
      retry: 600,
      expire: 86400,
      minimum: ttl,
    },
  });

  const queries: ZoneQuery[] = [];

  /**
   * The response to one query, or null when nothing must be sent. `limit` is the UDP size limit
   * in bytes; null over TCP (RFC 7766: the same answers, no truncation).
   */
  const respond = (msg: Buffer, limit: number | null): Buffer | null => {
    let q: dnsPacket.DecodedPacket;
    try {
      q = dnsPacket.decode(msg);
    } catch {
      if (msg.length < 12 || (msg.readUInt16BE(2) & 0x8000) !== 0) return null;
      // Echo the id and the opcode bits; no question section.
      const out = Buffer.alloc(12);
      out.writeUInt16BE(msg.readUInt16BE(0), 0);
      out.writeUInt16BE(0x8000 | (msg.readUInt16BE(2) & 0x7800) | RCODE.FORMERR, 2);
      queries.push({ name: '', type: '', rcode: 'FORMERR' });
      return out;
    }
    if (q.type === 'response') return null;
    const question = q.questions?.[0];
    const edns = q.additionals?.find((a) => a.type === 'OPT');
    const max = limit === null ? Infinity : edns ? Math.max(limit, edns.udpPayloadSize) : limit;
    const opcode = (q.flags ?? 0) & 0x7800;
    const reply = (rcode: keyof typeof RCODE, answers: dnsPacket.Answer[] = [], authorities: dnsPacket.Answer[] = []): Buffer => {
      queries.push({ name: question?.name ?? '', type: question?.type ?? '', rcode });
      const rd = (q.flags ?? 0) & dnsPacket.RECURSION_DESIRED;
      const aa = rcode === 'NOERROR' || rcode === 'NXDOMAIN' ? dnsPacket.AUTHORITATIVE_ANSWER : 0;
      const flags = opcode | aa | rd | RCODE[rcode];
      const base = { type: 'response' as const, id: q.id ?? 0, questions: question ? [question] : [] };
      const additionals: dnsPacket.Answer[] = edns ? [{ type: 'OPT', name: '.', udpPayloadSize: 1232, flags: 0 } as dnsPacket.Answer] : [];
      const out = dnsPacket.encode({ ...base, flags, answers, authorities, additionals });
      if (out.length <= max) return out;
      return dnsPacket.encode({ ...base, flags: flags | dnsPacket.TRUNCATED_RESPONSE, additionals });
    };

    if (opcode !== 0) return reply('NOTIMP');
    if (!question || q.questions?.length !== 1) return reply('FORMERR');
    const name = canonical(question.name);
    const zone = zoneOf(name);
    if (!zone) return reply('REFUSED');
    if (!exists(name, zone)) return reply('NXDOMAIN', [], [soa(zone)]);
    if (question.type === 'SOA' && name === zone) return reply('NOERROR', [soa(zone)]);
    const txt = byName.get(name);
    if ((question.type === 'TXT' || (question.type as string) === 'ANY') && txt) {
      return reply(
        'NOERROR',
        txt.map((chunks) => ({ type: 'TXT', name: question.name, ttl, data: chunks })),
      );
    }
    return reply('NOERROR', [], [soa(zone)]);
  };

  /** Never throws: a bug or an unencodable answer must not take the process down (the client times out). */
  const safeRespond = (msg: Buffer, limit: number | null): Buffer | null => {
    try {
      return respond(msg, limit);
    } catch {
      return null;
    }
  };

  const { udp, tcp } = await bindBoth(host, opts.port ?? 0);
  udp.on('message', (msg, from) => {
    const out = safeRespond(msg, UDP_LIMIT_BYTES);
    if (out) udp.send(out, from.port, from.address, () => {});
  });
  udp.on('error', () => {
    // After binding, errors are per-datagram (ICMP unreachable and the like); keep serving.
  });
  const sockets = new Set<NetSocket>();
  tcp.on('connection', (conn) => {
    sockets.add(conn);
    conn.on('close', () => sockets.delete(conn));
    conn.on('error', () => conn.destroy());
    conn.setTimeout(5000, () => conn.destroy());
    let pending = Buffer.alloc(0);
    conn.on('data', (data) => {
      pending = Buffer.concat([pending, data]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const msg = pending.subarray(2, 2 + pending.readUInt16BE(0));
        pending = pending.subarray(2 + msg.length);
        const out = safeRespond(msg, null);
        if (!out) return void conn.destroy();
        const len = Buffer.alloc(2);
        len.writeUInt16BE(out.length);
        conn.write(Buffer.concat([len, out]));
      }
    });
  });
  const port = udp.address().port;
  let closed: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    for (const c of sockets) c.destroy();
    await Promise.all([
      new Promise<void>((resolve) => udp.close(() => resolve())),
      new Promise<void>((resolve) => tcp.close(() => resolve())),
    ]);
  };
  return { host, port, address: formatAddress(host, port), queries, close: () => (closed ??= close()) };
}

/** Starts `target` listening (`start` calls its bind or listen with the callback) and resolves once it does. */
function listening(target: { once(e: 'error', l: (err: Error) => void): unknown; off(e: 'error', l: (err: Error) => void): unknown }, start: (ready: () => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    target.once('error', reject);
    start(() => {
      target.off('error', reject);
      resolve();
    });
  });
}

/**
 * Binds UDP and TCP on the same port. With port 0 the TCP port is chosen first, by the kernel,
 * among those free for a TCP listener; UDP then takes the same number, which is seldom in use
 * (the other order lost often on a busy machine: a UDP pick from the ephemeral range is where the
 * machine's outgoing TCP connections live). If UDP cannot take it, both are released and the pair
 * is tried again (20 times at most).
 *
 * @throws the bind error (e.g. EADDRINUSE) of the last try.
 */
async function bindBoth(host: string, port: number): Promise<{ udp: Socket; tcp: NetServer }> {
  for (let attempt = 1; ; attempt++) {
    const tcp = createServer();
    await listening(tcp, (ready) => tcp.listen(port, host, ready));
    const udp = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    try {
      await listening(udp, (ready) => udp.bind((tcp.address() as { port: number }).port, host, ready));
      return { udp, tcp };
    } catch (err) {
      try {
        udp.close();
      } catch {
        // not bound: nothing to release
      }
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
      if (port !== 0 || attempt >= 20) throw err;
    }
  }
}
