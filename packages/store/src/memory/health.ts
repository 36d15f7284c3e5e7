/**
 * What the memory ledger's `health` facet reads from it: the driver's name
 * and a ping that only checks the ledger is open (there is no database to
 * reach). `withStats` (core/stats.ts) builds the facet from it with the
 * ledger's counters.
 */
import type { StatsOptions } from '../core/stats.js';
import type { MemoryState } from './state.js';

/** The memory ledger's health source (see the module comment). */
export function memoryHealth(state: MemoryState): StatsOptions {
  return { driver: 'memory', ping: async () => state.assertOpen() };
}
