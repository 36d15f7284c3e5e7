/**
 * A loopback TCP proxy that can refuse connections (dropping the open ones)
 * and accept again on the same port: a database that "goes away" without
 * touching the database server the rest of the suite shares.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** A proxy listening on 127.0.0.1:`port`, forwarding to `target`'s host and port. */
export interface TcpProxy {
  readonly port: number;
  /** Close the listener and destroy every open connection. */
  down(): Promise<void>;
  /** Listen again on the same port. */
  up(): Promise<void>;
}

/** Start a proxy to `target` (a URL with host and port, e.g. a postgres:// URL). */
export async function tcpProxy(target: URL): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const up = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = createConnection(Number(target.port || 5432), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => {});
        }
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as { port: number }).port;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server!.close(() => resolve());
    });
  await up();
  return {
    get port() {
      return port;
    },
    down,
    up,
  };
}
