/**
 * The configuration of a test Dovecot (see dovecot.ts): who its processes run as (root or not) and
 * the `dovecot.conf` text (plus the oauth2 passdb's file) for one temp dir and port.
 */
import { execFileSync } from 'node:child_process';
import { userInfo } from 'node:os';

function idOf(args: string[]): string | null {
  try {
    return execFileSync('id', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

export interface Identity {
  internalUser: string;
  /** Set when it is not Dovecot's default (the `dovecot` group). */
  internalGroup: string | null;
  loginUser: string;
  mailUid: number;
  mailGid: number;
}

/** The users and uid/gid the config names: `nobody` and Dovecot's own users as root, else the current user. */
export function identity(): Identity {
  if (process.getuid?.() === 0) {
    const mailUid = Number(idOf(['-u', 'nobody']) ?? 65534);
    const mailGid = Number(idOf(['-g', 'nobody']) ?? 65534);
    const hasDovecot = idOf(['-u', 'dovecot']) !== null;
    const hasDovenull = idOf(['-u', 'dovenull']) !== null;
    return {
      internalUser: hasDovecot ? 'dovecot' : 'nobody',
      internalGroup: hasDovecot ? null : idOf(['-gn', 'nobody']),
      loginUser: hasDovenull ? 'dovenull' : 'nobody',
      mailUid,
      mailGid,
    };
  }
  const me = userInfo();
  const group = idOf(['-gn']);
  if (!group) throw new Error('cannot find the name of the current primary group (`id -gn` failed)');
  return { internalUser: me.username, internalGroup: group, loginUser: me.username, mailUid: me.uid, mailGid: me.gid };
}

/** The `dovecot.conf` text for one instance: IMAP only, plaintext on 127.0.0.1:`port`, a static passdb (and oauth2 when asked). */
export function config(o: { dir: string; port: number; password: string; home: string; id: Identity; mailFormat: 'maildir' | 'mdbox'; oauth2?: boolean }): string {
  const { dir, id } = o;
  return `# written by test/helpers/dovecot.ts
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
info_log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login${o.oauth2 ? ' xoauth2 oauthbearer' : ''}
auth_failure_delay = 0
default_internal_user = ${id.internalUser}
${id.internalGroup ? `default_internal_group = ${id.internalGroup}` : ''}
default_login_user = ${id.loginUser}
first_valid_uid = ${id.mailUid}
last_valid_uid = ${id.mailUid}
first_valid_gid = ${id.mailGid}
last_valid_gid = ${id.mailGid}
mail_location = ${o.mailFormat === 'mdbox' ? 'mdbox:~/mdbox' : 'maildir:~/Maildir'}
mail_fsync = never
${o.oauth2 ? `passdb {
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = ${dir}/dovecot-oauth2.conf.ext
}
` : ''}passdb {
  driver = static
  args = password=${o.password}
  ${o.oauth2 ? 'mechanisms = plain login' : ''}
}
userdb {
  driver = static
  args = uid=${id.mailUid} gid=${id.mailGid} home=${o.home}
}
protocol imap {
  mail_max_userip_connections = 200
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${o.port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
  # No auth penalty: every test logs in from 127.0.0.1, and one wrong-password test would slow
  # every later login by 2-15 s (Dovecot "Authentication Penalty").
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
`;
}

/**
 * The oauth2 passdb's file (Dovecot's `dovecot-oauth2.conf.ext`): RFC 7662 introspection by POST
 * to `introspectionUrl`, active when `{ "active": true }`, the login name from `username`.
 */
export function oauth2Config(introspectionUrl: string): string {
  return `introspection_mode = post\nintrospection_url = ${introspectionUrl}\nforce_introspection = yes\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n`;
}
