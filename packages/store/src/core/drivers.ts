/**
 * Loading a database driver only when a URL asks for it, the way drizzle
 * does: `better-sqlite3` (native, built on install) and `pg` are optional peer
 * dependencies of `@baton/store`, so its root entry imports neither and a
 * user installs only the one their ledger uses. `openLedger` and
 * `openAuditLog` import the driver's module through {@link importDriver};
 * when the driver package is not installed the error is one line naming the
 * package to install.
 */
import { LedgerError } from './errors.js';

/** The driver package each database needs, and the major version Baton is tested with. */
const DRIVERS = {
  sqlite: { name: 'better-sqlite3', major: 12 },
  postgres: { name: 'pg', major: 8 },
} as const;

/** Which database a driver module talks to. */
export type DriverKind = keyof typeof DRIVERS;

/** Whether `error` is Node's "package not found" for `name` itself (not for some other import). */
function isMissingPackage(error: unknown, name: string): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return error.message.includes(`'${name}'`);
}

/**
 * Import a driver's module (`load` is `() => import('../better-sqlite3/index.js')` or the like).
 *
 * @example `const { createSqliteLedger } = await importDriver('sqlite', 'ledger', () => import('../better-sqlite3/index.js'));`
 * @throws LedgerError "the sqlite: ledger needs better-sqlite3: npm install better-sqlite3@12" when the package is missing.
 */
export async function importDriver<T>(kind: DriverKind, what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const { name, major } = DRIVERS[kind];
    if (isMissingPackage(error, name)) {
      throw new LedgerError(`the ${kind}: ${what} needs ${name}: npm install ${name}@${major}`);
    }
    throw error;
  }
}
