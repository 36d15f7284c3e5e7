/**
 * The in-memory audit log: a Map of instances, each a Map of rounds, for tests
 * and single-process deployments. Entries are stored as the same JSON rows the
 * SQLite and PostgreSQL logs write, so values round-trip (and fail) alike, and
 * later changes to an appended object do not reach the log. An entry whose
 * round number is taken is a retried append (ignored) or another call's round
 * (numbered after the instance's last entry), as on every driver.
 */
import type { AuditEntry, AuditInstance } from '@baton/engine';
import {
  type AuditLogOptions,
  type AuditRow,
  fromAuditRow,
  instancesQuery,
  isRetriedAppend,
  reportAppendFailure,
  type StoreAuditLog,
  startAuditPruning,
  toAuditRow,
} from '../core/audit.js';
import { LedgerError } from '../core/errors.js';

/** Options for {@link createMemoryAuditLog}. */
export type MemoryAuditLogOptions = AuditLogOptions;

/**
 * Create an in-memory audit log.
 *
 * @example
 * ```ts
 * import { createRunner } from '@baton/engine';
 * import { createMemoryAuditLog } from '@baton/store/memory';
 *
 * const audit = createMemoryAuditLog();
 * const runner = createRunner({ ...options, audit });
 * ```
 */
export function createMemoryAuditLog(options: MemoryAuditLogOptions = {}): StoreAuditLog {
  const instances = new Map<string, Map<number, AuditRow>>();
  let closed = false;

  const log: StoreAuditLog = {
    async append(entry: AuditEntry): Promise<void> {
      try {
        assertOpen();
        const row = toAuditRow(entry);
        let rounds = instances.get(row.fid);
        if (!rounds) {
          rounds = new Map();
          instances.set(row.fid, rounds);
        }
        if (rounds.has(row.round)) {
          // A retried append is ignored; another call's round that took the same number goes last.
          if ([...rounds.values()].some((kept) => isRetriedAppend(row, kept))) return;
          row.round = Math.max(...rounds.keys()) + 1;
        }
        rounds.set(row.round, row);
      } catch (error) {
        reportAppendFailure(error, entry, options);
      }
    },

    async instances(query?: { flow?: string; limit?: number }): Promise<AuditInstance[]> {
      assertOpen();
      const { flow, limit } = instancesQuery(query);
      const found: AuditInstance[] = [];
      for (const [fid, rounds] of instances) {
        let count = 0;
        let firstAt = Number.POSITIVE_INFINITY;
        let lastAt = Number.NEGATIVE_INFINITY;
        let last: AuditRow | undefined;
        for (const row of rounds.values()) {
          if (flow !== undefined && row.flow !== flow) continue;
          count++;
          firstAt = Math.min(firstAt, row.at);
          lastAt = Math.max(lastAt, row.at);
          if (!last || row.round > last.round) last = row;
        }
        if (!last) continue;
        found.push({ fid, flow: last.flow, rounds: count, firstAt, lastAt, lastOutcome: fromAuditRow(last).outcome });
      }
      found.sort((a, b) => b.lastAt - a.lastAt || (a.fid < b.fid ? 1 : a.fid > b.fid ? -1 : 0));
      return found.slice(0, limit);
    },

    async rounds(fid: string): Promise<AuditEntry[]> {
      assertOpen();
      const rounds = instances.get(fid);
      if (!rounds) return [];
      return [...rounds.values()].sort((a, b) => a.round - b.round).map(fromAuditRow);
    },

    async prune(before: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (const [fid, rounds] of instances) {
        for (const [round, row] of rounds) {
          if (row.at < before) {
            rounds.delete(round);
            removed++;
          }
        }
        if (rounds.size === 0) instances.delete(fid);
      }
      return removed;
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await schedule.stop();
      instances.clear();
    },
  };

  const schedule = startAuditPruning((before) => log.prune(before), options);
  return log;

  function assertOpen(): void {
    if (closed) throw new LedgerError('The in-memory audit log is closed');
  }
}
