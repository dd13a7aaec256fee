/**
 * A scripted IMAP server on 127.0.0.1, just good enough for imapflow's check
 * (src/uplink/imap-mailbox.ts) without Dovecot: a folder of `uids` (default one message, UID 1)
 * that all match the SEARCH (or only `matching`), UID 1's header block and body served (100 bytes, From the agent).
 * Used by test/integration/uplink/imap-mailbox-session.test.ts (failures mid-FETCH) and
 * test/unit/uplink/imap-search.test.ts (the size of SEARCH answers, and one over the line limit:
 * `matching` narrows what SEARCH answers, and `FETCH <n> (UID)` answers the n-th UID).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { AGENT } from './imap-mailbox-kit.js';

export interface ScriptedImapOptions {
  /** Send 20 bytes of the 100-byte literal of the whole message, then nothing. */
  stallBody?: boolean;
  /** Hang up (BYE) on the FETCH of the whole message. */
  byeOnBody?: boolean;
  /** Answer EXAMINE with a tagged NO. */
  examineNo?: boolean;
  /** The folder's UIDs, ascending (default `[1]`); EXAMINE says EXISTS their count and UIDNEXT the last + 1. */
  uids?: number[];
  /** The UIDs that match the SEARCH, ascending (default all of `uids`): the rest is the person's other mail. */
  matching?: number[];
  /** Answer every `UID SEARCH` with the whole folder, whatever UID range it asks (a server that ignores the range). */
  ignoreSearchRange?: boolean;
  /** Told of every `UID SEARCH`: the UID range asked (`a:b`, `a:*`) and how many UIDs were answered. */
  onSearch?: (range: string, answered: number) => void;
  /** Refuse every `FETCH <n> (UID)` by message sequence number (tagged NO). */
  refuseSeqFetch?: boolean;
  /** Told of every `FETCH <n> (UID)` (by message sequence number): `n`. */
  onSeqFetch?: (seq: number) => void;
}

/** The folder's UIDs within `range` (`a`, `a:b` or `a:*`; `a:*` with `a` above them all is the highest: RFC 3501 §6.4.8). */
function inRange(uids: number[], range: string): number[] {
  const top = uids.at(-1) ?? 0;
  const [a, b = a] = range.split(':').map((x) => (x === '*' ? top : Number(x)));
  const lo = Math.min(a!, b!);
  const hi = Math.max(a!, b!);
  return uids.filter((u) => u >= lo && u <= hi);
}

/** Serves one client connection `s` as the scripted server (see the file comment). */
export function scriptedImap(s: Socket, o: ScriptedImapOptions = {}): void {
  const uids = o.uids ?? [1];
  const matching = o.matching ? new Set(o.matching) : null;
  const body = Buffer.from(`From: ${AGENT}\r\nSubject: x\r\n\r\n`.padEnd(100, 'b'));
  s.write('* OK [CAPABILITY IMAP4rev1] fake ready\r\n');
  let buf = '';
  s.on('data', (d) => {
    buf += d.toString('latin1');
    for (let i = buf.indexOf('\r\n'); i >= 0; i = buf.indexOf('\r\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const [tag, ...rest] = line.split(' ');
      const cmd = rest.join(' ').toUpperCase();
      const ok = (text = 'done'): boolean => s.write(`${tag} OK ${text}\r\n`);
      // Untagged data, then the tagged OK (which, as in this fake from the start, is skipped if write() reports backpressure).
      const reply = (data: string | Buffer): void => {
        if (s.write(data)) ok();
      };
      if (cmd.startsWith('LOGIN')) ok('[CAPABILITY IMAP4rev1] logged in');
      else if (cmd.startsWith('CAPABILITY')) reply('* CAPABILITY IMAP4rev1\r\n');
      else if (cmd.startsWith('NAMESPACE')) reply('* NAMESPACE (("" ".")) NIL NIL\r\n');
      else if (cmd.startsWith('LIST')) reply('* LIST () "." INBOX\r\n');
      else if (cmd.startsWith('LSUB')) ok();
      else if (cmd.startsWith('EXAMINE') && o.examineNo) s.write(`${tag} NO [SERVERBUG] internal error\r\n`);
      else if (cmd.startsWith('EXAMINE')) {
        s.write(`* ${uids.length} EXISTS\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [UIDNEXT ${(uids.at(-1) ?? 0) + 1}] ok\r\n`);
        ok('[READ-ONLY] examined');
      } else if (cmd.startsWith('UID SEARCH')) {
        const range = /^UID SEARCH UID (\S+)/.exec(cmd)?.[1] ?? '1:*';
        const found = (o.ignoreSearchRange ? uids : inRange(uids, range)).filter((u) => !matching || matching.has(u));
        o.onSearch?.(range, found.length);
        // One write, so the tagged OK follows even when the answer is megabytes long.
        s.write(`* SEARCH${found.length ? ' ' : ''}${found.join(' ')}\r\n${tag} OK done\r\n`);
      } else if (/^FETCH \d+ \(?UID\)?$/.test(cmd)) {
        // The UID of the n-th message (RFC 3501 §2.3.1.2); a number past the last is refused (BAD).
        const n = Number(cmd.split(' ')[1]);
        o.onSeqFetch?.(n);
        if (o.refuseSeqFetch) s.write(`${tag} NO [SERVERBUG] internal error\r\n`);
        else if (n >= 1 && n <= uids.length) reply(`* ${n} FETCH (UID ${uids[n - 1]})\r\n`);
        else s.write(`${tag} BAD Error in IMAP command FETCH: Invalid messageset\r\n`);
      } else if (cmd.startsWith('UID FETCH') && cmd.includes('BODY.PEEK[HEADER]')) {
        const head = body.subarray(0, body.indexOf('\r\n\r\n') + 4);
        reply(Buffer.concat([Buffer.from(`* 1 FETCH (UID 1 RFC822.SIZE ${body.length} BODY[HEADER]<0> {${head.length}}\r\n`), head, Buffer.from(')\r\n')]));
      } else if (cmd.startsWith('UID FETCH') && cmd.includes('RFC822.SIZE')) reply(`* 1 FETCH (UID 1 RFC822.SIZE ${body.length})\r\n`);
      else if (cmd.startsWith('UID FETCH') && cmd.includes('BODY.PEEK[]')) {
        if (o.byeOnBody) s.end('* BYE going away\r\n');
        else if (o.stallBody) s.write(Buffer.concat([Buffer.from(`* 1 FETCH (UID 1 BODY[] {${body.length}}\r\n`), body.subarray(0, 20)]));
        else reply(Buffer.concat([Buffer.from(`* 1 FETCH (UID 1 BODY[] {${body.length}}\r\n`), body, Buffer.from(')\r\n')]));
      } else if (cmd.startsWith('LOGOUT')) {
        if (s.write('* BYE bye\r\n') && ok()) s.end();
      } else if (cmd.startsWith('CLOSE')) ok();
      else s.write(`${tag} BAD unknown\r\n`);
    }
  });
}

/**
 * TCP servers on 127.0.0.1 that run a handler for each client, and `stop()` to end them and their
 * connections (a test file's `afterAll`).
 */
export function scriptedServers() {
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  return {
    servers,
    /** Listens on a free port and runs `onConnection` for each client; the port. */
    listen: async (onConnection: (s: Socket) => void): Promise<number> => {
      const srv = createServer((s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {});
        onConnection(s);
      });
      servers.push(srv);
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      return (srv.address() as { port: number }).port;
    },
    stop: async (): Promise<void> => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}
