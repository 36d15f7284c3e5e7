/**
 * What the SQLite ledger's `health` facet reads from it: the driver's name
 * and a ping that runs `select 1` on the ledger's connection (rejecting once
 * the ledger is closed). `withStats` (core/stats.ts) builds the facet from it
 * with the ledger's counters.
 */
import type { StatsOptions } from '../core/stats.js';
import type { SqliteHandle } from './handle.js';

/** The SQLite ledger's health source (see the module comment). */
export function sqliteHealth(handle: SqliteHandle): StatsOptions {
  const ping = handle.client.prepare('select 1');
  return {
    driver: 'sqlite',
    ping: async () => {
      handle.assertOpen();
      ping.get();
    },
  };
}
