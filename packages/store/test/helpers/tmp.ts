/** Temporary folders for SQLite files, removed after the suite. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A fresh temporary folder for this suite, deleted in `afterAll`. */
export function useTempDir(prefix = 'baton-store-'): () => string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return () => dir;
}
