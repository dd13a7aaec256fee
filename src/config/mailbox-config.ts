/** The `[mailbox]` table and its `[mailbox.imap]` or `[mailbox.maildir]` (README, "Install and configure"). */
import type { LoadOptions, MailboxConfig } from './config.js';
import { ConfigError, type Fields } from './fields.js';
import { parseImapAuth, parseProvider } from './provider.js';
import { ADDRESS_RE, isLoopbackLiteral } from './values.js';

/**
 * Reads `[mailbox]` of the kind it names; a table or key of the other kind is recorded as not
 * applying (Fields.refuse), reported with the file's other key problems. A bad value among
 * `[mailbox]`'s own keys is recorded (Fields.collect) and `[mailbox.imap]` or `[mailbox.maildir]` is
 * still read, so its problems come in the same run; a bad `kind` or provider key ends the reading
 * (the sub-table depends on them).
 * @returns the mailbox, or undefined when a problem was recorded in `f.problems`
 * @throws ConfigError naming the key and the fix (a bad `kind`, `verify_dkim` or provider key)
 */
export function parseMailbox(f: Fields, baseDir: string, o: LoadOptions): MailboxConfig | undefined {
  const kind = f.oneOf('kind', ['imap', 'maildir'] as const, 'imap');
  const verifyDkim = f.boolean('verify_dkim', true);
  const { provider, profile } = parseProvider(f, verifyDkim);
  const own = f.collect((): MailboxConfig => {
    const address = f.string('address').toLowerCase();
    if (!ADDRESS_RE.test(address)) throw new ConfigError(f.key('address'), 'must be a plain address like me@example.com');
    return {
      kind,
      address,
      checkIntervalMs: f.integer('check_interval_s', 15, 0, 3600) * 1000,
      checkWaitMs: f.integer('check_wait_ms', 5000, 100, 60_000),
      maxFetchPerCheck: f.integer('max_fetch_per_check', 50, 1, 10_000),
      maxPrefixesPerCheck: f.integer('max_prefixes_per_check', 25_000, 100, 1_000_000),
      maxHeadersPerCheck: f.integer('max_headers_per_check', 10_000, 100, 100_000),
      maxMessageBytes: f.integer('max_message_bytes', 10 * 1024 * 1024, 1024, 200 * 1024 * 1024),
      maxAttachmentBytes: f.integer('max_attachment_bytes', 1024 * 1024, 0, 50 * 1024 * 1024),
      provider,
      profile,
      authservId: profile.authservId,
      borderHost: profile.borderHost,
      verifyDkim,
      dateSkewMs: f.integer('date_skew_s', 900, 0, 7 * 86400) * 1000,
      watch: f.boolean('watch', false),
      watchTickMs: f.integer('watch_tick_s', 5, 1, 3600) * 1000,
      ...(kind === 'imap' ? { folder: f.string('folder', 'INBOX') } : {}),
    };
  });
  const other = kind === 'imap' ? 'maildir' : 'imap';
  if (f.has(other)) f.refuse(other, `applies only when mailbox.kind = "${other}" (it is "${kind}"); remove the [mailbox.${other}] table or change kind`);
  // IMAP's only key outside [mailbox.imap]: with a Maildir it would do nothing, so it is refused like the table.
  if (kind === 'maildir' && f.has('folder')) f.refuse('folder', `applies only when mailbox.kind = "imap" (it is "maildir"); a Maildir's folder is mailbox.maildir.path: remove folder or change kind`);
  const sub =
    kind === 'imap'
      ? f.section('imap', (t) => {
          const imap = {
            host: t.string('host'),
            port: t.integer('port', 993, 1, 65535),
            tls: t.boolean('tls', true),
            user: t.string('user'),
            ...parseImapAuth(t, baseDir, provider, o),
            timeoutMs: t.integer('timeout_s', 20, 1, 300) * 1000,
          };
          if (!imap.tls && !isLoopbackLiteral(imap.host)) {
            throw new ConfigError(t.key('tls'), 'may be false only for a loopback IMAP server; use tls = true');
          }
          return { imap };
        }, true)
      : f.section('maildir', (t) => ({ maildirPath: t.path('path', baseDir) }), true);
  // [mailbox]'s unknown keys when a bad value stopped its reading: found by reading it again (Fields.probeUnknown).
  if (own === undefined) {
    f.problems.push(...f.probeUnknown((t) => parseMailbox(t, baseDir, o)));
    return undefined;
  }
  f.rejectUnknown();
  return sub === undefined ? undefined : { ...own, ...sub };
}
