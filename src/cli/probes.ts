/**
 * The network probes of `doctor`. None of them asks anything of a peer beyond what the check
 * needs: the webhook probe resolves the host and opens a TCP connection (and for https completes a
 * TLS handshake with the URL's host name), then closes it without sending a byte of HTTP — the
 * agent is never woken. The DNS probe asks one TXT question.
 */
import { lookup } from 'node:dns/promises';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { makeResolver } from '../uplink/dkim.js';

/** The outcome of a probe: `ok` with a detail line, or a failure with its stage and error code. */
export type ProbeResult =
  | { ok: true; detail: string }
  | { ok: false; stage: 'dns' | 'connect' | 'tls'; code: string; message: string };

/** Error codes of a TLS certificate that does not verify (OpenSSL and Node names). */
const CERT_CODE = /^(ERR_TLS_CERT|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/;

function errCode(err: unknown): string {
  return (err as NodeJS.ErrnoException)?.code ?? 'ERROR';
}

/** Opens the connection and resolves once it is up (TCP connected, or TLS handshake done), or rejects. */
function open(address: string, port: number, tls: { servername?: string } | null, timeoutMs: number): Promise<Socket | TLSSocket> {
  return new Promise((resolveSocket, reject) => {
    const socket: Socket | TLSSocket = tls
      ? tlsConnect({ host: address, port, ...(tls.servername ? { servername: tls.servername } : {}), rejectUnauthorized: true })
      : netConnect({ host: address, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      resolveSocket(socket);
    });
    socket.once('error', (err: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}

/**
 * Resolves the webhook URL's host, connects to its port, and for https completes a TLS handshake
 * that verifies the certificate for the URL's host name (SNI set to it). Then closes. Every
 * resolved address is tried in turn until one connects.
 *
 * @param timeoutMs for each connection attempt (the webhook's own timeout is a good value)
 */
export async function probeWebhook(url: URL, timeoutMs: number): Promise<ProbeResult> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const https = url.protocol === 'https:';
  const port = url.port ? Number(url.port) : https ? 443 : 80;
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (err) {
      return { ok: false, stage: 'dns', code: errCode(err), message: `${host} does not resolve (${errCode(err)})` };
    }
  }
  let last: ProbeResult = { ok: false, stage: 'connect', code: 'ENOADDR', message: `${host} has no address` };
  for (const address of addresses) {
    try {
      const socket = await open(address, port, https ? (isIP(host) ? {} : { servername: host }) : null, timeoutMs);
      let detail = `${host}${address !== host ? ` (${address})` : ''} port ${port}: TCP connected`;
      if (https) {
        const t = socket as TLSSocket;
        const cert: PeerCertificate = t.getPeerCertificate();
        detail += `, ${t.getProtocol() ?? 'TLS'} handshake ok, certificate valid until ${cert.valid_to ?? '?'}`;
      }
      // A clean close (TLS close_notify, then FIN), so the peer sees a finished handshake and no request.
      socket.end();
      setTimeout(() => socket.destroy(), 1000).unref();
      return { ok: true, detail: `${detail}; no HTTP request sent` };
    } catch (err) {
      const code = errCode(err);
      const stage = https && (CERT_CODE.test(code) || /SSL|TLS/i.test(code)) ? 'tls' : 'connect';
      last = { ok: false, stage, code, message: `${host}${address !== host ? ` (${address})` : ''} port ${port}: ${(err as Error).message}` };
    }
  }
  return last;
}

/**
 * Asks one DNS server for the TXT records of `_domainkey.<domain>`, as a DKIM key lookup would
 * (selector names live below it). An answer, an empty answer or "no such name" all prove the
 * server answers for that domain; a refusal, a server failure or silence do not.
 */
export async function probeDnsServer(server: string, domain: string, timeoutMs: number): Promise<ProbeResult> {
  let resolver;
  try {
    resolver = makeResolver([server], { timeoutMs });
  } catch (err) {
    return { ok: false, stage: 'dns', code: 'EBADSERVER', message: (err as Error).message.replace(/^a2a-mailbridge: /, '') };
  }
  const name = `_domainkey.${domain}`;
  try {
    await resolver(name, 'TXT');
    return { ok: true, detail: `${server} answered TXT ${name}` };
  } catch (err) {
    const code = errCode(err);
    if (code === 'ENODATA' || code === 'ENOTFOUND') return { ok: true, detail: `${server} answered TXT ${name} (${code === 'ENODATA' ? 'no record' : 'no such name'})` };
    return { ok: false, stage: 'dns', code, message: `${server} gave no answer for TXT ${name} (${code})` };
  }
}
