/**
 * Host normalisation for tenant binding: lowercase, trailing dot removed, default ports 80 and
 * 443 dropped. Returns undefined for an empty host and for anything that is not a host: a name
 * of ASCII letters, digits, `-` and `_` in dot-separated labels (an IPv4 address is one), or an
 * IPv6 literal in brackets, then at most a port of 1..65535. So `user@host` (userinfo), `*`,
 * full-width or control characters and a bare `:port` bind no tenant, and every parser in front
 * of the relay that reads the header differently is refused instead of disagreed with.
 */
export function normalizeHost(raw: string | undefined | null): string | undefined {
  if (!raw) return undefined;
  let host = raw.trim().toLowerCase();
  const port = /:(\d+)$/.exec(host);
  if (port && !host.endsWith(']') && (port[1] === '80' || port[1] === '443')) {
    host = host.slice(0, -port[0].length);
  }
  const [name, ...rest] = splitPort(host);
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  if (!isHostName(bare) || (rest.length > 0 && !isPort(rest[0]))) return undefined;
  const normalized = rest.length ? `${bare}:${rest[0]}` : bare;
  return normalized.length > 0 && normalized.length <= 255 ? normalized : undefined;
}

const NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;
const IPV6_LITERAL = /^\[[0-9a-f:.]+\]$/;

function isHostName(name: string): boolean {
  return name.length <= 253 && (NAME.test(name) || IPV6_LITERAL.test(name));
}

function isPort(port: string): boolean {
  return /^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535;
}

/**
 * The `Host` header of a request from its raw header list: '' (not a host) when it is sent more
 * than once, as RFC 9112 §3.2 requires a server to refuse; Node itself keeps the first.
 */
export function hostHeader(rawHeaders: readonly string[]): string | undefined {
  let host: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() !== 'host') continue;
    if (host !== undefined) return '';
    host = rawHeaders[i + 1];
  }
  return host;
}

/** The host part without any port, for lookups that ignore the port. */
export function hostWithoutPort(host: string): string {
  return splitPort(host)[0];
}

function splitPort(host: string): [string, ...string[]] {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    const name = host.slice(0, end + 1);
    const port = host.slice(end + 2);
    return port ? [name, port] : [name];
  }
  const i = host.lastIndexOf(':');
  if (i > 0 && host.indexOf(':') === i) return [host.slice(0, i), host.slice(i + 1)];
  return [host];
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** localhost, 127.0.0.1 and [::1] name one host for auth URL comparisons (port not included). */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname.toLowerCase());
}
