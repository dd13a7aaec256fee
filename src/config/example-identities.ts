/**
 * Names reserved for documentation and testing (RFC 2606: the top-level domains `.test`,
 * `.example`, `.invalid` and `.localhost` (§2), and `example.com`, `example.net`, `example.org`
 * (§3)). No real mailbox, agent or DKIM key lives there, so one still in a config means an
 * example value was never replaced: `doctor` warns, and `serve` says so at start.
 */
import type { Config } from './config.js';

/** One config key still holding an example name. */
export interface ExampleIdentity {
  key: string;
  value: string;
}

const RESERVED_TLDS = ['test', 'example', 'invalid', 'localhost'];
const RESERVED_DOMAINS = ['example.com', 'example.net', 'example.org'];

/** True when `domain` (a host name, no trailing dot) is or lies under an RFC 2606 reserved name. */
export function isReservedDomain(domain: string): boolean {
  const d = domain.toLowerCase().replace(/\.$/, '');
  const tld = d.slice(d.lastIndexOf('.') + 1);
  return RESERVED_TLDS.includes(tld) || RESERVED_DOMAINS.some((r) => d === r || d.endsWith(`.${r}`));
}

/**
 * The identities of the config that are RFC 2606 example names: the mailbox address and IMAP
 * user, and each agent's address, DKIM domain and webhook host. A loopback webhook (an IP) is
 * never one.
 */
export function exampleIdentities(config: Config): ExampleIdentity[] {
  const out: ExampleIdentity[] = [];
  const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1);
  const add = (key: string, value: string, domain: string): void => {
    if (isReservedDomain(domain)) out.push({ key, value });
  };
  add('mailbox.address', config.mailbox.address, domainOf(config.mailbox.address));
  const user = config.mailbox.imap?.user;
  if (user?.includes('@')) add('mailbox.imap.user', user, domainOf(user));
  config.agents.forEach((a, i) => {
    add(`agents[${i}].address`, a.address, domainOf(a.address));
    add(`agents[${i}].dkim_domain`, a.dkimDomain, a.dkimDomain);
    add(`agents[${i}].webhook.url`, a.webhook.url.origin, a.webhook.url.hostname);
  });
  return out;
}

/** One line naming the keys and values, for doctor and serve. */
export function exampleIdentitiesText(found: readonly ExampleIdentity[]): string {
  return `${found.map((f) => `${f.key} = ${f.value}`).join(', ')} ${found.length === 1 ? 'is an example name' : 'are example names'} (RFC 2606): no real mail or agent lives there`;
}
