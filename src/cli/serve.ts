import { startApp } from '../app.js';
import { loadConfig } from '../config/config.js';
import { createServiceLogger, underSystemd } from '../log.js';

/**
 * `a2a-mailbridge serve`: runs the bridge until SIGINT/SIGTERM, then closes the socket, waits for
 * work under way (a mailbox check, webhook attempts) and closes the store.
 */
export async function serve(configFile: string, o: { logLevel?: string }): Promise<void> {
  const config = loadConfig(configFile);
  const log = await createServiceLogger({ ...config.log, level: o.logLevel ?? config.log.level });
  const app = await startApp(config, { log });
  if (config.log.file && !underSystemd()) {
    // The JSON log goes to a file: say once, on the terminal, where the bridge and its log are.
    const rotated = config.log.file.replace(/(\.[^./]*)?$/, '.1$1');
    process.stderr.write(
      `a2a-mailbridge: listening on ${config.agents.map((a) => app.server.endpoint(a)).join(', ')}; log: ${rotated} (numbered as it rotates)\n`,
    );
  }
  const stop = (signal: string): void => {
    log.info({ signal }, 'stopping');
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: (err as Error).message }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  // A safety net: every state change is one transaction, so an unexpected rejection leaves the
  // store consistent; log it and keep serving rather than dropping every caller.
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason instanceof Error ? reason.message : String(reason), stack: reason instanceof Error ? reason.stack : undefined }, 'unhandled rejection');
  });
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}
