/**
 * A loopback mirror of better-sqlite3's prebuilt binaries, for the consumer test. This machine
 * reaches the npm registry but not GitHub, so every `npm install` of better-sqlite3 falls back
 * from `prebuild-install` to compiling the addon (about a minute on two cores). Users on a
 * connected machine download a prebuild instead, and companies point prebuild-install at a
 * mirror through `npm_config_better_sqlite3_binary_host`: this is such a mirror. The first
 * project still builds from source; {@link PrebuildMirror.publish} then packs its
 * `build/Release/better_sqlite3.node` as the tarball prebuild-install asks for
 * (`/v{version}/better-sqlite3-v{version}-node-v{abi}-{platform}-{arch}.tar.gz`), so later
 * installs run the package's real install script and get the same binary in seconds.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** The environment variable prebuild-install reads the mirror's URL from. */
export const MIRROR_ENV = 'npm_config_better_sqlite3_binary_host';

export interface PrebuildMirror {
  /** The mirror's base URL (`http://127.0.0.1:PORT`), the value of {@link MIRROR_ENV}. */
  readonly url: string;
  /** Pack the addon built in `moduleDir` (a `node_modules/better-sqlite3`); resolves to the path served. */
  publish(moduleDir: string): Promise<string>;
  /** How many times a published tarball was downloaded. */
  served(): number;
  close(): Promise<void>;
}

/** Start the mirror on loopback; it answers 404 until a tarball is published. */
export async function startPrebuildMirror(): Promise<PrebuildMirror> {
  const files = new Map<string, Buffer>();
  let served = 0;
  const server = createServer((request, response) => {
    const body = files.get(new URL(request.url ?? '/', 'http://mirror').pathname);
    if (request.method !== 'GET' || body === undefined) {
      response.writeHead(404).end();
      return;
    }
    served += 1;
    response.writeHead(200, { 'content-type': 'application/gzip', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async publish(moduleDir) {
      const { version } = JSON.parse(readFileSync(join(moduleDir, 'package.json'), 'utf8')) as { version: string };
      const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
      const scratch = await mkdtemp(join(tmpdir(), 'baton-prebuild-'));
      try {
        const tarball = join(scratch, name);
        await promisify(execFile)('tar', ['-czf', tarball, '-C', moduleDir, 'build/Release/better_sqlite3.node']);
        const path = `/v${version}/${name}`;
        files.set(path, await readFile(tarball));
        return path;
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    },
    served: () => served,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
