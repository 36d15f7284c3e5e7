/**
 * A loopback mirror of better-sqlite3's prebuilt binaries, for the consumer test. This machine
 * reaches the npm registry but not GitHub, so every `npm install` of better-sqlite3 falls back
 * from `prebuild-install` to compiling the addon (about a minute on two cores). Users on a
 * connected machine download a prebuild instead, and companies point prebuild-install at a
 * mirror through `npm_config_better_sqlite3_binary_host`: this is such a mirror.
 * {@link PrebuildMirror.publish} packs the `build/Release/better_sqlite3.node` of a copy built
 * here (the workspace's, which `pnpm install` built from source, or the first project's) as the
 * tarball prebuild-install asks for
 * (`/v{version}/better-sqlite3-v{version}-node-v{abi}-{platform}-{arch}.tar.gz`), so installs of
 * that version run the package's real install script and get the same binary in seconds; any
 * other version is not found and builds from source as before.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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
  close(): Promise<void>;
}

/** Whether the better-sqlite3 in `moduleDir` was compiled here (node-gyp leaves its Makefile) rather than installed from a prebuild. */
export function compiledHere(moduleDir: string): boolean {
  return existsSync(join(moduleDir, 'build', 'Makefile'));
}

/** Start the mirror on loopback; it answers 404 until a tarball is published. */
export async function startPrebuildMirror(): Promise<PrebuildMirror> {
  const files = new Map<string, Buffer>();
  const server = createServer((request, response) => {
    const body = files.get(new URL(request.url ?? '/', 'http://mirror').pathname);
    if (request.method !== 'GET' || body === undefined) {
      response.writeHead(404).end();
      return;
    }
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
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
