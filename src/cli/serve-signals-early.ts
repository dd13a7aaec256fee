/**
 * Imported first by the process entry (src/cli/entry.ts, before the CLI's bundle is read and
 * compiled) and by src/cli/main.ts (run from source, before commander and the CLI's other modules
 * load): a command line that runs `serve` holds its stop signals from here on
 * (src/cli/serve-signals.ts), so a Ctrl-C while the modules load, the config is read or the claim
 * is taken stops serve cleanly rather than ending the process by the signal. Node's own start,
 * before any JavaScript runs, is the only time left unheld.
 */
import { holdStopSignals, namesServe } from './serve-signals.js';

if (namesServe(process.argv.slice(2))) holdStopSignals();
