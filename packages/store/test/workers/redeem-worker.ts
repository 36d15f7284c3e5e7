/**
 * Child process for the race tests and the benchmark. Opens a ledger
 * (`sqlite <path>` or `postgres <url>`), says `ready`, and on `go` works
 * through the given items (a few in flight at once): redeems jtis or token
 * codes, records decisions (`id/key` pairs, by compare-and-set on their
 * request's version, read again on a conflict), or moves parked requests on by
 * compare-and-set (read the version, write the next one, until `targetVersion`),
 * or claims durable steps (`id/key` pairs) and records the outcome of each it won,
 * then reports what it won and exits. Driven over the fork IPC channel.
 */
import type { FullLedger } from '@baton/engine';
import { createSqliteLedger } from '../../src/better-sqlite3/index.js';
import { createPostgresLedger } from '../../src/node-postgres/index.js';

/** Messages from the parent. */
export type WorkerCommand = {
  type: 'go';
  mode: 'jti' | 'token' | 'decision' | 'park' | 'step';
  /** This worker's number: its decider name and the mark in the states it writes. */
  worker?: number;
  /** `park` mode: the version each request is moved on to. */
  targetVersion?: number;
  items: string[];
  /** Wall-clock time (ms) to start at, so every worker starts together. */
  startAt: number;
  /** The engine clock value to redeem with. */
  now: number;
  /** How many redemptions each worker keeps in flight. */
  concurrency: number;
};

/** Messages to the parent. */
export type WorkerReport =
  | { type: 'ready' }
  | { type: 'done'; won: string[]; counts: Record<string, number>; ms: number }
  | { type: 'error'; message: string };

const [kind, location] = process.argv.slice(2);
const send = (message: WorkerReport) => process.send!(message);

async function open(): Promise<FullLedger> {
  if (kind === 'sqlite') return createSqliteLedger({ path: location!, pruneIntervalMs: 0 });
  if (kind === 'postgres') return createPostgresLedger({ connectionString: location!, pruneIntervalMs: 0 });
  throw new Error(`unknown ledger kind ${kind}`);
}

async function main(): Promise<void> {
  const ledger = await open();
  process.once('message', async (command: WorkerCommand) => {
    try {
      const delay = command.startAt - Date.now();
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      const won: string[] = [];
      const counts: Record<string, number> = {};
      const started = performance.now();
      let next = 0;
      const count = (status: string) => {
        counts[status] = (counts[status] ?? 0) + 1;
      };
      const me = `worker-${command.worker ?? process.pid}`;
      const lane = async () => {
        while (next < command.items.length) {
          const item = command.items[next++]!;
          if (command.mode === 'step') {
            const [id, key] = item.split('/') as [string, string];
            const claim = await ledger.steps.claimStep({
              id,
              key,
              owner: me,
              leaseUntil: command.now + 3_600_000,
              now: command.now,
              expiresAt: command.now + 3_600_000,
            });
            count(claim.status);
            if (claim.status === 'claimed') {
              const recorded = await ledger.steps.recordStep({
                id,
                key,
                status: 'succeeded',
                outcome: me,
                now: command.now,
              });
              count(`record_${recorded.status}`);
              if (recorded.status === 'recorded') won.push(item);
            }
          } else if (command.mode === 'decision') {
            const [id, key] = item.split('/') as [string, string];
            // As the engine does: record at the version just read; on a conflict read it again.
            for (;;) {
              const expectedVersion = (await ledger.requests.getRequest(id))?.version ?? 0;
              const result = await ledger.decisions.recordDecision({
                id,
                key,
                decider: me,
                content: item,
                now: command.now,
                expectedVersion,
              });
              count(result.status);
              if (result.status === 'conflict') continue;
              if (result.status === 'recorded') won.push(item);
              break;
            }
          } else if (command.mode === 'park') {
            // Move the request on until it reaches the target version, losing to others on the way.
            for (;;) {
              const current = await ledger.requests.getRequest(item);
              if (current === undefined) throw new Error(`request ${item} vanished`);
              if (current.version >= command.targetVersion!) break;
              const next = current.version + 1;
              const result = await ledger.requests.parkRequest(
                { ...current, state: `${me}:${next}`, now: command.now + next },
                current.version,
              );
              count(result.status);
              if (result.status === 'parked') {
                if (result.version !== next)
                  throw new Error(`${item}: wrote version ${result.version}, expected ${next}`);
                won.push(`${item}#${next}`);
              }
            }
          } else {
            const result =
              command.mode === 'jti'
                ? await ledger.redemptions.redeem({
                    jti: item,
                    responsesDigest: 'race',
                    expiresAt: command.now + 3_600_000,
                    now: command.now,
                  })
                : await ledger.redemptions.redeemToken(item, 'race', command.now);
            count(result.status);
            if (result.status === 'redeemed') won.push(item);
          }
        }
      };
      await Promise.all(Array.from({ length: command.concurrency }, lane));
      const ms = performance.now() - started;
      await ledger.close();
      send({ type: 'done', won, counts, ms });
      process.disconnect();
    } catch (error) {
      send({ type: 'error', message: String((error as Error)?.stack ?? error) });
      process.exitCode = 1;
      process.disconnect();
    }
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  process.exitCode = 1;
  process.disconnect();
});
