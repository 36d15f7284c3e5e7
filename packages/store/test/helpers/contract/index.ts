/**
 * The Ledger contract, one suite per facet: `describeLedgerContract(name,
 * open)` runs every one of them against a driver, so the memory, SQLite and
 * PostgreSQL test files are one call each. `open(store)` opens a ledger on
 * the store `store` names: suites that count or prune what a whole table
 * holds get a store of their own (`votes`, `delegations`, `schedule`,
 * `events`); the others share `ledger`, each with a handle of its own, and
 * use fresh random ids. With `shared`, opening a name again reaches the same
 * store (a second process's handle, as SQLite files and PostgreSQL databases
 * are), and the suites that race two handles run.
 *
 * ```ts
 * describeLedgerContract('memory', async () => createMemoryLedger({ pruneIntervalMs: 0 }));
 * describeLedgerContract('sqlite', async (store) => createSqliteLedger({ path: join(dir(), `${store}.db`) }), { shared: true });
 * ```
 */
import type { FullLedger } from '@baton/engine';
import { decisionsContract } from './decisions/decisions.js';
import { delegationContract } from './decisions/delegations.js';
import { votesContract } from './decisions/votes.js';
import { eventsContract } from './events.js';
import { healthContract } from './health.js';
import { lifecycleContract } from './lifecycle.js';
import { outboxContract } from './outbox.js';
import { redemptionsContract } from './redemptions.js';
import { requestsContract } from './requests.js';
import { runsContract } from './runs.js';
import { scheduleContract } from './schedule.js';
import { stepsContract } from './steps.js';

/** Opens a ledger on the store `store` names (see the module comment). */
export type OpenContractLedger = (store: string) => Promise<FullLedger>;

/** How a driver's stores behave. */
export interface LedgerContractOptions {
  /** Opening a store name again reaches the same store (SQLite, PostgreSQL); not for memory. Default false. */
  readonly shared?: boolean;
}

/** Run every facet's contract suite (and prune and close) against the ledgers `open` makes. */
export function describeLedgerContract(
  name: string,
  open: OpenContractLedger,
  options: LedgerContractOptions = {},
): void {
  const on = (store: string) => () => open(store);
  const again = (store: string) => (options.shared ? on(store) : undefined);
  redemptionsContract(name, on('ledger'), again('ledger'));
  requestsContract(name, on('ledger'));
  decisionsContract(name, on('ledger'));
  votesContract(name, on('votes'), again('votes'));
  delegationContract(name, on('delegations'));
  stepsContract(name, on('ledger'));
  runsContract(name, on('ledger'));
  scheduleContract(name, on('schedule'), again('schedule'));
  outboxContract(name, on('schedule'));
  eventsContract(name, on('events'), again('events'));
  healthContract(name, on('ledger'));
  lifecycleContract(name, on('ledger'));
}

export {
  decisionsContract,
  delegationContract,
  eventsContract,
  healthContract,
  lifecycleContract,
  outboxContract,
  redemptionsContract,
  requestsContract,
  runsContract,
  scheduleContract,
  stepsContract,
  votesContract,
};
