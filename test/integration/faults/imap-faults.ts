/**
 * IMAP faults on demand: a TCP proxy in front of Dovecot that can refuse, stall or cut a connection
 * in the middle of a FETCH and come back on the same port; a server that never greets; and a
 * MULTIAPPEND that fills a folder with many messages in one command.
 */
import { createServer, createConnection, type Server, type Socket } from 'node:net';
import { freePort } from '../../helpers/free-port.js';

/**
 * How the proxy treats a new connection:
 * - `pass`: forwards both ways to the target;
 * - `refuse`: nothing listens on the port (connect gets ECONNREFUSED);
 * - `silent`: accepts and never sends a byte (no greeting);
 * - `drop-on-fetch`: forwards until the client sends a `BODY.PEEK[]` FETCH (of whole messages,
 *   after their header blocks were read), then passes on the first half of the server's answer
 *   and cuts the connection (mid-literal).
 */
export type ProxyMode = 'pass' | 'refuse' | 'silent' | 'drop-on-fetch';

export interface ImapProxy {
  port: number;
  mode: ProxyMode;
  /** Switches the mode for new connections; `refuse` closes the listener and cuts open connections. */
  setMode(mode: ProxyMode): Promise<void>;
  /** Connections accepted so far, and how many were cut by `drop-on-fetch`. */
  stats: { accepted: number; dropped: number };
  close(): Promise<void>;
}

/**
 * Starts a TCP proxy on a fixed loopback port in front of `targetPort`.
 * @param connectDelayMs wait this long before connecting upstream (a slow server: the greeting comes late)
 */
export async function startImapProxy(targetPort: number, initial: ProxyMode = 'pass', connectDelayMs = 0): Promise<ImapProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  const stats = { accepted: 0, dropped: 0 };

  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  };
  const onConnection = (client: Socket): void => {
    track(client);
    stats.accepted++;
    if (proxy.mode === 'silent') return;
    const dropOnFetch = proxy.mode === 'drop-on-fetch';
    let upstream: Socket | null = null;
    const early: Buffer[] = [];
    let fetching = false;
    client.on('data', (d: Buffer) => {
      if (dropOnFetch && d.toString('latin1').includes('BODY.PEEK[]')) fetching = true;
      if (upstream) upstream.write(d);
      else early.push(d);
    });
    const connectUpstream = (): void => {
      if (client.destroyed) return;
      const up = createConnection({ host: '127.0.0.1', port: targetPort });
      upstream = up;
      track(up);
      for (const d of early.splice(0)) up.write(d);
      up.on('data', (d: Buffer) => {
        if (!fetching) return void client.write(d);
        stats.dropped++;
        client.write(d.subarray(0, Math.max(1, Math.floor(d.length / 2))), () => {
          client.destroy();
          up.destroy();
        });
      });
      client.on('close', () => up.destroy());
      up.on('close', () => client.destroy());
    };
    if (connectDelayMs > 0) setTimeout(connectUpstream, connectDelayMs);
    else connectUpstream();
  };
  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const srv = createServer(onConnection);
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', () => {
        srv.off('error', reject);
        server = srv;
        resolve();
      });
    });
  const unlisten = async (): Promise<void> => {
    const srv = server;
    server = null;
    for (const s of sockets) s.destroy();
    if (srv) await new Promise<void>((r) => srv.close(() => r()));
  };

  const proxy: ImapProxy = {
    port,
    mode: initial,
    stats,
    async setMode(mode) {
      proxy.mode = mode;
      if (mode === 'refuse') await unlisten();
      else if (!server) await listen();
    },
    close: unlisten,
  };
  if (initial !== 'refuse') await listen();
  return proxy;
}

/** A TCP server that accepts and never greets (a stalled IMAP server). */
export async function startSilentServer(): Promise<{ port: number; accepted: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const srv = createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as { port: number }).port,
    accepted: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

/**
 * Appends many messages to `folder` in ONE IMAP APPEND command (RFC 3502 MULTIAPPEND, with
 * RFC 7888 LITERAL+ so no continuation round trips): Dovecot stores them in one transaction —
 * 100,000 small messages in about 1 s into mdbox, 10–60 s into a Maildir on a busy ext4 disk.
 *
 * @returns the UIDVALIDITY and the UID range Dovecot assigned (APPENDUID), in message order
 */
export async function multiAppend(
  server: { port: number; user: string; password: string },
  folder: string,
  messages: Buffer[],
  timeoutMs = 120_000,
): Promise<{ uidValidity: string; firstUid: number; lastUid: number }> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: '127.0.0.1', port: server.port });
    const timer = setTimeout(() => fail(new Error(`MULTIAPPEND of ${messages.length} messages: no answer within ${timeoutMs} ms`)), timeoutMs);
    let buf = '';
    let stage: 'greeting' | 'login' | 'append' | 'done' = 'greeting';
    const fail = (err: Error): void => {
      clearTimeout(timer);
      s.destroy();
      reject(err);
    };
    s.on('error', fail);
    s.on('data', (b: Buffer) => {
      buf += b.toString('latin1');
      if (stage === 'greeting' && buf.includes('\r\n')) {
        if (!buf.startsWith('* OK')) return fail(new Error(`unexpected greeting: ${buf}`));
        stage = 'login';
        buf = '';
        s.write(`L1 LOGIN ${server.user} ${server.password}\r\n`);
      } else if (stage === 'login') {
        const m = /^L1 (OK|NO|BAD).*$/m.exec(buf);
        if (!m) return;
        if (m[1] !== 'OK') return fail(new Error(`LOGIN: ${m[0]}`));
        stage = 'append';
        buf = '';
        const parts: Buffer[] = [];
        let head = `A1 APPEND ${folder}`;
        for (const raw of messages) {
          parts.push(Buffer.from(`${head} (\\Seen) {${raw.length}+}\r\n`, 'latin1'), raw);
          head = '';
        }
        parts.push(Buffer.from('\r\n'));
        s.write(Buffer.concat(parts));
      } else if (stage === 'append') {
        const m = /^A1 (OK|NO|BAD)(.*)$/m.exec(buf);
        if (!m) return;
        stage = 'done';
        clearTimeout(timer);
        s.end('L2 LOGOUT\r\n');
        const uid = /\[APPENDUID (\d+) (\d+)(?::(\d+))?\]/.exec(m[2] ?? '');
        if (m[1] !== 'OK' || !uid) return reject(new Error(`APPEND: ${m[0]}`));
        resolve({ uidValidity: uid[1]!, firstUid: Number(uid[2]), lastUid: Number(uid[3] ?? uid[2]) });
      }
    });
  });
}
