#!/usr/bin/env node
import { Command } from 'commander';
import { VERSION } from '../a2a/agent-card.js';
import { ConfigError } from '../config/config.js';
import { StoreError } from '../store/db.js';
import { ListenError } from '../a2a/server.js';
import { configPath } from './config-path.js';
import { serve } from './serve.js';
import { demo } from '../demo/round-trip.js';

/** Errors a person can fix from the message alone: printed without a stack, exit code 2. */
function isUserError(err: unknown): err is Error {
  return err instanceof ConfigError || err instanceof StoreError || err instanceof ListenError || (err as NodeJS.ErrnoException)?.code === 'EADDRINUSE';
}

const program = new Command();
program
  .name('a2a-mailbridge')
  .description('A loopback A2A peer for cloud agents that are woken by webhook and answer by email.')
  .version(VERSION)
  .option('-c, --config <file>', 'config file (default: $A2A_MAILBRIDGE_CONFIG or ~/.config/a2a-mailbridge/config.toml)');

program
  .command('serve')
  .description('run the bridge on loopback')
  .option('--log-level <level>', 'pino log level', 'info')
  .action(async (o: { logLevel: string }) => serve(configPath(program.opts().config), o));

program
  .command('demo')
  .description('a full round trip on loopback: bridge, simulated cloud agent, signed mail; exits 0 on success')
  .option('--verbose', 'print the bridge log')
  .action(async (o: { verbose?: boolean }) => {
    process.exitCode = (await demo({ verbose: o.verbose === true })) ? 0 : 1;
  });

program.parseAsync().catch((err: unknown) => {
  if (isUserError(err)) {
    process.stderr.write(`a2a-mailbridge: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`a2a-mailbridge: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
