import { isIPv4 } from 'node:net';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { claimHeld, notesConfig, type ClaimHolder } from '../store/store.js';

/**
 * Who listens at a loopback address, from the kernel's socket tables (Linux proc(5):
 * `<procRoot>/net/tcp` and `tcp6`): the owner's uid and the socket's inode. `status` and `stop`
 * ask it when no serve holds this config's store's claim and something answers at
 * `server.listen` — this config's bridge whose store (its folder with the claim) was moved away
 * while it runs, or another program ({@link claimAway}).
 */
export interface ListeningSocket {
  uid: number;
  inode: number;
}

/**
 * The address as the kernel's table writes it: IPv4 as one 32-bit word in host byte order
 * (little-endian: 127.0.0.1 is `0100007F`), IPv6 as four such words; hex, upper case.
 * @returns null for a host that is not an IP address literal
 */
export function procAddress(host: string): string | null {
  const word = (bytes: number[]): string => bytes.reverse().map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join('');
  if (isIPv4(host)) return word(host.split('.').map(Number));
  const h = host.replace(/^\[|\]$/g, '');
  if (!h.includes(':') || !/^[0-9a-fA-F:]+$/.test(h)) return null;
  const [head, tail] = h.split('::') as [string, string | undefined];
  const groups = (s: string | undefined): string[] => (s ? s.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  if (tail === undefined ? left.length !== 8 : left.length + right.length > 7) return null;
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right].map((g) => Number.parseInt(g, 16));
  const bytes = all.flatMap((g) => [g >> 8, g & 0xff]);
  return [0, 4, 8, 12].map((i) => word(bytes.slice(i, i + 4))).join('');
}

/** State `0A` of a row of the kernel's TCP table: TCP_LISTEN. */
const LISTEN = '0A';

/**
 * The socket listening at `host:port`, as the kernel lists it.
 * @param procRoot `/proc` (a test seam)
 * @returns null when nothing listens there, the host is not an IP literal, or there is no
 *   `<procRoot>/net` (macOS: who listens cannot be told this way)
 */
export function listeningSocket(host: string, port: number, procRoot = '/proc'): ListeningSocket | null {
  const address = procAddress(host);
  if (address === null) return null;
  const local = `${address}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const table = address.length === 8 ? 'tcp' : 'tcp6';
  let text: string;
  try {
    text = readFileSync(`${procRoot}/net/${table}`, 'utf8');
  } catch {
    return null;
  }
  for (const row of text.split('\n').slice(1)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
    const f = row.trim().split(/\s+/);
    if (f[1] !== local || f[3] !== LISTEN) continue;
    const uid = Number(f[7]);
    const inode = Number(f[9]);
    if (Number.isSafeInteger(uid) && Number.isSafeInteger(inode) && inode > 0) return { uid, inode };
  }
  return null;
}

/** The targets of the open descriptors of process `pid` (`<procRoot>/<pid>/fd/*`); empty when they cannot be read (gone, or another user's). */
function openFiles(pid: number, procRoot: string): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`${procRoot}/${pid}/fd`);
  } catch {
    return [];
  }
  return fds.flatMap((fd) => {
    try {
      return [readlinkSync(`${procRoot}/${pid}/fd/${fd}`)];
    } catch {
      return [];
    }
  });
}

/**
 * The process holding the socket `inode` among its open descriptors (a link to `socket:[<inode>]`),
 * of those whose descriptors this user may read.
 * @returns its pid, or null when none is found
 */
export function socketHolder(inode: number, procRoot = '/proc'): number | null {
  let pids: string[];
  try {
    pids = readdirSync(procRoot).filter((n) => /^[1-9]\d*$/.test(n));
  } catch {
    return null;
  }
  const want = `socket:[${inode}]`;
  for (const p of pids) if (openFiles(Number(p), procRoot).includes(want)) return Number(p);
  return null;
}

/** A serve's claim found where its store folder was moved: the serve's pid, its socket, its store's path now and its note. */
export interface ClaimAway {
  pid: number;
  inode: number;
  /** The store's path now (its lock file's, without `-serve.lock`). */
  store: string;
  holder: ClaimHolder;
}

/**
 * This config's serve listening at `host:port` though no claim is at its store.path: its store
 * folder, with the claim's lock, was moved away while it runs. Followed from the socket: the
 * listener is this user's, the process holding it has a claim lock open (`<store>-serve.lock`,
 * src/store/serve-claim.ts) where the folder is now, a serve holds that claim, and its note names
 * this pid, this address and this config file — what the claim at store.path proves of a bridge
 * there, so it may be sent the bearer under the same rule (src/cli/health-probe.ts). Linux only
 * (proc(5)); a lock deleted rather than moved is not followed.
 * @returns null when any of that does not hold, or where there is no `<procRoot>/net`
 */
export function claimAway(configFile: string, listen: string, host: string, port: number, procRoot = '/proc'): ClaimAway | null {
  const socket = listeningSocket(host, port, procRoot);
  if (socket === null || socket.uid !== (process.getuid?.() ?? -1)) return null;
  const pid = socketHolder(socket.inode, procRoot);
  if (pid === null) return null;
  for (const lock of openFiles(pid, procRoot)) {
    if (!lock.endsWith(CLAIM_LOCK_SUFFIX)) continue;
    const store = lock.slice(0, -CLAIM_LOCK_SUFFIX.length);
    const claim = claimHeld(store);
    if (!claim.held || claim.holder === null) continue;
    const h = claim.holder;
    if (h.pid === pid && h.listen === listen && notesConfig(h, configFile)) return { pid, inode: socket.inode, store, holder: h };
  }
  return null;
}

/** How the claim's lock file is named beside its store (src/store/serve-claim.ts `claimFiles`). */
const CLAIM_LOCK_SUFFIX = '-serve.lock';
