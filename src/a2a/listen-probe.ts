import { createServer } from 'node:net';
import { isLoopbackLiteral } from '../config/config.js';
import { ListenError } from './server.js';

/**
 * Whether `host:port` can be bound now: a TCP socket is bound there as the server binds it
 * (`exclusive`) and closed at once, before it accepts any connection. `serve` calls it before it
 * opens (or creates, or migrates) the store, so a bridge that cannot listen leaves nothing behind;
 * `doctor` calls it to tell a taken address. Port 0 is not probed: any free port does. Another
 * process may take the address between the probe and the real bind (then serve fails as before).
 *
 * @param host a loopback literal (`server.listen`'s host, as the loader resolves it)
 * @throws ListenError for an address that is not loopback; the bind error as Node gives it
 *   (EADDRINUSE, EACCES…, an Error with `code`, `address` and `port`) otherwise
 */
export async function probeListen(host: string, port: number): Promise<void> {
  if (!isLoopbackLiteral(host)) throw new ListenError(`refusing to bind ${host}: a2a-mailbridge binds loopback addresses only`);
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => {
      probe.off('error', reject);
      resolve();
    });
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
