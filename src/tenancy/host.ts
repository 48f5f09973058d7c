/**
 * Host normalisation for tenant binding: lowercase, trailing dot removed,
 * default ports 80 and 443 dropped. Returns undefined for an empty host.
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
  const normalized = rest.length ? `${bare}:${rest[0]}` : bare;
  return normalized.length > 0 && normalized.length <= 255 ? normalized : undefined;
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
