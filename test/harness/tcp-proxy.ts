/**
 * A loopback TCP proxy in front of a real server, for faults a server's own process cannot show:
 * a replica that accepts slowly (each new connection is held `delayMs` before it is joined to the
 * server), one that resets every connection, or a black hole that accepts and never answers.
 * The mode applies to connections accepted after it is set.
 */
import { AddressInfo, createServer, connect, Server, Socket } from 'node:net';

export type ProxyMode = { kind: 'pass'; delayMs: number } | { kind: 'reset' } | { kind: 'blackhole' };

export interface TcpProxy {
  readonly port: number;
  mode: ProxyMode;
  /** Rewrites a postgres URL's host:port to the proxy's. */
  url(target: string): string;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number, mode: ProxyMode = { kind: 'pass', delayMs: 0 }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const proxy: { mode: ProxyMode } = { mode };
  const server: Server = createServer((client) => {
    track(client);
    const m = proxy.mode;
    if (m.kind === 'reset') return void client.resetAndDestroy();
    if (m.kind === 'blackhole') return;
    const join = () => {
      if (client.destroyed) return;
      const upstream = connect(targetPort, targetHost);
      track(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    };
    client.pause();
    setTimeout(() => {
      client.resume();
      join();
    }, m.delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    get mode() {
      return proxy.mode;
    },
    set mode(m: ProxyMode) {
      proxy.mode = m;
    },
    url: (target) => {
      const u = new URL(target);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
