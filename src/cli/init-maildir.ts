/** `init --maildir <path>`: the example config turned into one that reads a Maildir (README, "Install and configure"). */
import { stringify } from 'smol-toml';

/**
 * Thrown when mailbridge.example.toml no longer has a line this transform rewrites: the example
 * changed, and the transform must follow it (test/unit/cli/init.test.ts loads the result).
 */
export class ExampleShapeError extends Error {
  override name = 'ExampleShapeError';
}

/** Replaces the one match of `re` in `text`; throws ExampleShapeError naming `what` when there is none. */
function replaceOnce(text: string, re: RegExp, to: string, what: string): string {
  if (!re.test(text)) throw new ExampleShapeError(`mailbridge.example.toml has no ${what}; init --maildir cannot rewrite it`);
  return text.replace(re, () => to);
}

/**
 * The example config with `[mailbox]` set to read the Maildir at `maildirPath`, everything else as
 * it is: `kind = "maildir"`, no `folder` (the loader refuses it with a Maildir:
 * src/config/mailbox-config.ts), `[mailbox.imap]` replaced by `[mailbox.maildir]` with `path` (the
 * loader refuses a table of the other kind). So no IMAP password file is named.
 * @param maildirPath an absolute path (the config's relative paths would resolve against its folder);
 *   written as a TOML string, escaped by smol-toml
 * @throws ExampleShapeError when the example lacks a line rewritten here
 */
export function maildirConfig(example: string, maildirPath: string): string {
  let text = replaceOnce(example, /^kind = "imap" .*$/m, `kind = "maildir"                   # or "imap", with [mailbox.imap] (see mailbridge.example.toml)`, 'mailbox.kind line');
  // `folder` and its comment lines below it (each starting with spaces and `#`).
  text = replaceOnce(text, /^folder = "INBOX".*\n(?: +#.*\n)*/m, '', 'mailbox.folder line');
  // [mailbox.imap] and its keys and comments, through the commented-out [mailbox.maildir] example.
  text = replaceOnce(
    text,
    /^\[mailbox\.imap\]\n(?:(?!\[)[^\n]*\n)*?# \[mailbox\.maildir\]\n# path = .*\n/m,
    `[mailbox.maildir]\n# the folder your mail sync (mbsync, offlineimap…) fills; it holds cur/, new/ and tmp/\n${stringify({ path: maildirPath })}`,
    '[mailbox.imap] table followed by a commented-out [mailbox.maildir]',
  );
  return text;
}
