// First: a `serve` command line holds Ctrl-C and SIGTERM while the rest loads (serve-signals-early.ts).
import './serve-signals-early.js';
import { Argument, Command, type CommanderError } from 'commander';
import { VERSION } from '../a2a/agent-card.js';
import { configPath } from '../config/config-path.js';
import { endQuietlyOnClosedPipes, whenStdoutCloses } from './closed-pipe.js';
import { CliFailure } from './errors.js';
import { exitAfterWrite } from './exit-after-write.js';
import { cleanLines } from './format.js';
import { holdStopSignals } from './serve-signals.js';
import type { CancelOptions } from './cancel.js';
import type { LedgerOptions } from './ledger.js';
import type { StoreLocation } from './open-store.js';
import type { PruneOptions } from './prune.js';
import type { ServiceInstallOptions } from './service.js';
import type { TasksOptions } from './tasks.js';

/**
 * Exit codes: 0 ok; 1 a check or an operation failed (CliFailure, doctor); 2 the command line or
 * the config is wrong (UsageError, ConfigError, StoreError, commander's usage errors), or `serve`
 * is refused at start (server.listen taken: EADDRINUSE; another serve on the store: StoreInUseError).
 *
 * Each command's module is imported when that command runs, so `tasks` or `--version` does not
 * load the IMAP client, the HTTP server and the mail parsers.
 */

/** Errors a person can fix from the message alone: printed without a stack, exit code 2. Matched by name, so their modules need not load. */
const USER_ERRORS = new Set(['UsageError', 'ConfigError', 'StoreError', 'StoreInUseError', 'ListenError']);
function isUserError(err: unknown): err is Error {
  return (err instanceof Error && USER_ERRORS.has(err.name)) || (err as NodeJS.ErrnoException)?.code === 'EADDRINUSE';
}

// Everything this command creates — the store and its -wal/-shm files, logs, backups, service
// files — is private to the user: the store holds raw mail and live reply tokens.
process.umask(0o077);

// `a2a-mailbridge tasks | head` closes the pipe early: that is not an error (closed-pipe.ts).
endQuietlyOnClosedPipes();

const program = new Command();
program
  .name('a2a-mailbridge')
  .description('A loopback A2A peer for cloud agents that are woken by webhook and answer by email.')
  .version(VERSION)
  .option('-c, --config <file>', 'config file (default: $A2A_MAILBRIDGE_CONFIG, else $XDG_CONFIG_HOME/a2a-mailbridge/config.toml, ~/.config/… when XDG_CONFIG_HOME is unset)')
  // Usage errors exit 2 (help and --version exit 0); set before the commands so they inherit it.
  .exitOverride((err: CommanderError) => process.exit(err.exitCode === 0 ? 0 : 2))
  // Commander's own errors (missing argument, unknown option or command) read as the CLI's own:
  // `a2a-mailbridge: <message>`, not `error: <message>`, what they quote of the command line shown
  // escaped as every message is (format.ts cleanLines). Help is not affected (it is not an error).
  .configureOutput({ outputError: (text, write) => write(cleanLines(text.replace(/^error: /, 'a2a-mailbridge: '))) });

const config = (): string => configPath(program.opts<{ config?: string }>().config);
const where = (o: { db?: string }): StoreLocation => ({ configFile: config(), ...(o.db !== undefined ? { db: o.db } : {}) });
const dbOption = ['--db <file>', 'read this store file (a backup, say) instead of store.path of the config'] as const;
const run = (code: number): void => {
  process.exitCode = code;
};

program
  .command('serve')
  .description('run the bridge on loopback')
  .option('--log-level <level>', 'pino log level (default: log.level of the config, else info)')
  .action(async (o: { logLevel?: string }) => {
    // Held since main.ts began to load (serve-signals-early.ts); here for a command line namesServe missed.
    const signals = holdStopSignals();
    return (await import('./serve.js')).serve(config(), o, signals);
  });

program
  .command('init')
  .description('write a commented config and the secret files (mode 0600) into a private folder; never overwrites')
  .option('--dir <dir>', 'the folder (default: that of the config file as every command finds it: --config, $A2A_MAILBRIDGE_CONFIG, $XDG_CONFIG_HOME/a2a-mailbridge, ~/.config/a2a-mailbridge); the config is <dir>/config.toml, and a --config naming another file is refused')
  .option('--maildir <path>', 'read replies from this Maildir (a folder your mail sync fills) instead of IMAP: no IMAP keys, no IMAP password file')
  .action(async (o: { dir?: string; maildir?: string }) => {
    const flag = program.opts<{ config?: string }>().config;
    run((await import('./init.js')).runInit({ ...(o.dir !== undefined ? { dir: o.dir } : {}), ...(flag !== undefined ? { configFlag: flag } : {}), ...(o.maildir !== undefined ? { maildir: o.maildir } : {}) }));
  });

program
  .command('doctor')
  .description('check the config, secret files, store, mailbox, webhooks and DNS servers; print the Hermes snippet')
  .option('--json', 'machine-readable report')
  .action(async (o: { json?: boolean }) => run(await (await import('./doctor.js')).runDoctor(config(), o)));

const provider = program.command('provider').description('mailbox provider presets (docs/providers.md)');
provider
  .command('detect')
  .description('name the preset (or print the patterns) that trusts the Authentication-Results of a mail you received from outside')
  .option('--file <eml>', 'a message saved from your mail client (the whole source)')
  .option('--from <address>', 'read the newest message from this sender in the configured mailbox, read-only')
  .option('--json', 'machine-readable result')
  .action(async (o: { file?: string; from?: string; json?: boolean }) => run(await (await import('./provider.js')).runProviderDetect(config(), o)));

const auth = program.command('auth').description('OAuth2 sign-in for IMAP');
auth
  .command('login')
  .description('sign in with the OAuth 2.0 device flow (RFC 8628) and store the refresh token (mode 0600)')
  .argument('<provider>', 'google, microsoft or custom, as mailbox.imap.oauth2_provider says')
  .action(async (name: string) => run(await (await import('./auth-login.js')).runAuthLogin(config(), name)));

program
  .command('config')
  .description('print the config in effect: every key with its default filled in, paths absolute, secrets as their files only')
  .option('--json', 'as JSON')
  .action(async (o: { json?: boolean }) => run((await import('./show-config.js')).runConfig(config(), o)));

program
  .command('status')
  .description('a short summary: is the bridge answering, store size, open tasks, the last mailbox check, failing webhooks, refused replies for open tasks; exit 0 answering, 3 not answering (or the bridge at server.listen serves another config\'s store), 4 cannot tell')
  .option('--json', 'as JSON')
  .action(async (o: { json?: boolean }) => run(await (await import('./status.js')).runStatus(config(), o)));

program
  .command('stop')
  .description("stop this config's running bridge (found as status finds it): SIGTERM, as Ctrl-C does, then wait up to 15 s for it to exit; exit 0 stopped, 1 not stopped (another config's bridge, run by the service manager, or still running), 3 not running, 4 cannot tell")
  .action(async () => run(await (await import('./stop.js')).runStop(config())));

program
  .command('tasks')
  .description('list tasks, newest status first')
  .option('--agent <name>', 'only this agent')
  .option('--state <states>', 'comma-separated states (working, input-required, completed…) or open / finished')
  .option('--context <id>', 'only this context id')
  .option('--since <time>', 'status changed since: ISO time or age (30m, 2h, 7d)')
  .option('--limit <n>', 'at most n tasks (default 50)')
  .option(...dbOption)
  .option('--json', 'JSON array')
  .action(async (o: TasksOptions & { db?: string }) => run((await import('./tasks.js')).runTasks(where(o), o)));

program
  .command('show')
  .description("one task's timeline (turns, webhook attempts, mail verdicts, state changes, audit) and its measured gaps; of the mail, the newest 200 rows and the accepted replies, the rest counted per verdict")
  .argument('<task>', 'task id, or a unique prefix of at least 4 characters')
  .option(...dbOption)
  .option('--json', 'JSON object')
  .action(async (task: string, o: { json?: boolean; db?: string }) => run((await import('./show.js')).runShow(where(o), task, o)));

program
  .command('ledger')
  .description('the mail ledger: every fetched message and its verdict, newest first')
  .option('--verdict <verdict>', 'an exact verdict (bad-token) or a prefix ending in ":" (auth:)')
  .option('--task <id>', 'only mail tagged with this task: its id or a unique prefix (at least 4 characters)')
  .option('--since <time>', 'seen since: ISO time or age (30m, 2h, 7d)')
  .option('--until <time>', 'seen until: ISO time or age')
  .option('--before <id>', 'only rows older than this ledger id: the next page after a listing whose last row had this id')
  .option('--limit <n>', 'at most n rows (default 50)')
  .option('--raw <id>', "write that row's raw message bytes to stdout (redirect to a file)")
  .option(...dbOption)
  .option('--wide', 'every column whole: From, Subject and the reason are not cut (the reason is cut in its middle otherwise)')
  .option('--json', 'JSON array (never the raw bytes)')
  .action(async (o: LedgerOptions & { db?: string }) => run((await import('./ledger.js')).runLedger(where(o), o)));

program
  .command('prune')
  .description('delete finished tasks and old ledger rows; open tasks are never touched')
  .option('--older-than <age>', 'tasks finished, and mail seen, longer ago than this: days (30, 0.5) or an age (12h, 7d, 2w)')
  .option('--dry-run', 'count only; delete nothing')
  .option('--db <file>', 'delete from this store file instead of store.path of the config (with --dry-run: count in it)')
  .option('--json', 'counts as JSON')
  .action(async (o: PruneOptions & { db?: string }) => run(await (await import('./prune.js')).runPrune(where(o), o)));

program
  .command('retry')
  .description('re-dispatch a task that FAILED by dispatch (attempts exhausted, or refused by the webhook): same job, fresh token and webhook-id')
  .argument('<task>', 'task id, or a unique prefix of at least 4 characters')
  .action(async (task: string) => run(await (await import('./retry.js')).runRetry(config(), task)));

program
  .command('cancel')
  .description('cancel open tasks as A2A CancelTask does (tokens revoked, a pending webhook stopped); sends the cancel notice when notify_cancel is on, and says what came of it; exit 1 if any task was refused')
  .argument('[task...]', 'task ids, or unique prefixes of at least 4 characters')
  .option('--all-open', "every open task (submitted, working, input-required) of the agent --agent names")
  .option('--agent <name>', 'with --all-open: whose open tasks')
  .action(async (tasks: string[], o: CancelOptions) => run(await (await import('./cancel.js')).runCancel(config(), tasks, o)));

program
  .command('backup')
  .description('online copy of the store into a new file (mode 0600, one file: no -wal/-shm), checked with quick_check')
  .argument('<file>', 'the new file; never overwritten')
  .option('--db <file>', 'copy this store file instead of store.path of the config')
  .option('--json', 'the file, its size, pages and schema version as JSON')
  .action(async (file: string, o: { db?: string; json?: boolean }) => run(await (await import('./backup.js')).runBackup(where(o), file, o)));

const secret = program.command('secret').description('the secret files the config names');
secret
  .command('new')
  .description("(re)generate one secret file, mode 0600: the facade's bearer or an agent's whsec_ signing secret; never printed")
  .argument('<name>', 'bearer, webhook-secret, or a key as doctor names it (server.bearer_file, agents[0].webhook.secret_file)')
  .option('--agent <name>', 'with several agents: whose webhook secret')
  .option('--force', 'replace an existing file (the old secret stops working)')
  .action(async (name: string, o: { agent?: string; force?: boolean }) => run((await import('./secret.js')).runSecretNew(config(), name, o)));

const service = program.command('service').description('the launchd or systemd service');
service
  .command('install')
  .description('write the LaunchAgent plist or the systemd user unit with absolute paths; print the command that loads it')
  .option('--launchd', 'a LaunchAgent (default on macOS)')
  .option('--systemd', 'a systemd user unit (default elsewhere)')
  .option('--dry-run', 'print the file instead of writing it')
  .option('--force', 'replace an existing file')
  .action(async (o: ServiceInstallOptions) => run((await import('./service.js')).runServiceInstall(config(), o)));
service
  .command('uninstall')
  .description('stop and unload the service (systemctl --user disable --now, or launchctl bootout) and remove its file; the config, store and logs stay')
  .option('--launchd', 'the LaunchAgent (default on macOS)')
  .option('--systemd', 'the systemd user unit (default elsewhere)')
  .option('--dry-run', 'print what would be run and removed')
  .action(async (o: { launchd?: boolean; systemd?: boolean; dryRun?: boolean }) => run((await import('./service-manage.js')).runServiceUninstall(o)));
service
  .command('status')
  .description('is the service file installed and up to date, what the manager says, and does this config\'s bridge answer /health; exit 0 only when installed and answering')
  .option('--launchd', 'the LaunchAgent (default on macOS)')
  .option('--systemd', 'the systemd user unit (default elsewhere)')
  .option('--json', 'as JSON')
  .action(async (o: { launchd?: boolean; systemd?: boolean; json?: boolean }) => run(await (await import('./service-manage.js')).runServiceStatus(config(), o)));

program
  .command('completion')
  .description('print a shell completion script, generated from this program (install: see the README)')
  .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
  .action(async (shell: 'bash' | 'zsh' | 'fish') => {
    process.stdout.write((await import('./completion.js')).completionScript(program, shell));
  });

program
  .command('demo')
  .description('a full round trip on loopback: bridge, simulated cloud agent, signed mail; exits 0 on success')
  .option('--verbose', 'print the bridge log')
  .option('--reply-delay <ms>', 'how long the simulated cloud agent waits before it mails its reply (0 to 600000; default 300)')
  .action(async (o: { verbose?: boolean; replyDelay?: string }) => {
    const delay = o.replyDelay === undefined ? undefined : (await import('./args.js')).parseCount(o.replyDelay, '--reply-delay', 0, 600_000, 'milliseconds');
    const { demo } = await import('../demo/round-trip.js');
    process.exitCode = (await demo({ verbose: o.verbose === true, whenOutputCloses: whenStdoutCloses, ...(delay === undefined ? {} : { replyDelayMs: delay }) })) ? 0 : 1;
  });

program.parseAsync().catch(async (err: unknown) => {
  if ((err as NodeJS.ErrnoException)?.code === 'EADDRINUSE') {
    const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
    // By what, when it can tell (as doctor's listen check and status do): this config's bridge, or another.
    const { listenTakenLine } = await import('./listen-taken.js');
    return exitAfterWrite(await listenTakenLine(config(), `${e.address ?? 'the address'}:${e.port ?? '?'}`), 2);
  }
  // A message may quote what a file held (a config line with a terminal's escape sequence):
  // every control or invisible character but the line breaks is shown escaped (format.ts).
  if (isUserError(err)) {
    return exitAfterWrite(`a2a-mailbridge: ${cleanLines(err.message)}\n`, 2);
  }
  if ((err as Error)?.name === 'MailboxError') {
    // A command that did not turn it into a CliFailure itself: the same line with the fix by kind.
    const { asCliFailure } = await import('./mailbox-fix.js');
    err = asCliFailure(err);
  }
  if (err instanceof CliFailure) {
    return exitAfterWrite(`a2a-mailbridge: ${cleanLines(err.message)}\n`, 1);
  }
  return exitAfterWrite(`a2a-mailbridge: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`, 1);
});
