/**
 * No principal in clear at rest (issue 28): decisions run through a real
 * `baton serve` (bearer tokens, the SDK client, `--audit`) on a SQLite file
 * and on a fresh PostgreSQL database, then every column of every table is
 * scanned for the readable ids of the requester and the deciders. Without
 * `--store-principal-names` none appears anywhere; with it they appear only
 * in the name columns (`requester_name`, `decider_name`, `principal_name`).
 * And the upgrade from ledger schema 5, whose `baton_decisions.decider` held
 * the decider in clear: a waiting request with a recorded decision and an
 * ended one are migrated, the runner rewrites their deciders as keyed hashes
 * (the readable id gone unless names are stored), and the waiting request
 * continues with the decision. Loopback only; every wait is bounded.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CallContext,
  createKeyRing,
  createRequestStateCodec,
  createRunner,
  type FullLedger,
  generateKey,
  type RoundOutcome,
} from '@baton/engine';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { createPostgresLedger } from '@baton/store/node-postgres';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { expenseApproval } from '../examples/approvals/expenseApproval.js';
import { createTestDatabase } from '../packages/store/test/helpers/postgres.js';
import { connectHttp, ROOT, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';

// better-sqlite3 and pg are the store's (optional peer) dependencies: load the store's copies.
const storeRequire = createRequire(join(ROOT, 'packages/store/package.json'));
const Database = storeRequire('better-sqlite3') as new (
  path: string,
  options?: { readonly?: boolean },
) => {
  prepare(sql: string): { all(): unknown[] };
  exec(sql: string): void;
  close(): void;
};
const pg = storeRequire('pg') as {
  Client: new (options: {
    connectionString: string;
  }) => {
    connect(): Promise<void>;
    query<R = Record<string, unknown>>(sql: string): Promise<{ rows: R[] }>;
    end(): Promise<void>;
  };
};

const dir = mkdtempSync(join(tmpdir(), 'baton-principals-'));
const BATON_KEYS = generateKey();
const ALICE = 'alice.requester@example.com';
const BOB = 'bob.manager@example.com';
const CAROL = 'carol.finance@example.com';
const PRINCIPALS = [ALICE, BOB, CAROL];
const token = (name: string) => `${name.split('.')[0]}-token-${'x'.repeat(24)}`;
const tokensFile = join(dir, 'tokens.json');
writeFileSync(
  tokensFile,
  JSON.stringify({
    [token(ALICE)]: { principal: ALICE, roles: [] },
    [token(BOB)]: { principal: BOB, roles: ['manager'] },
    [token(CAROL)]: { principal: CAROL, roles: ['finance'] },
  }),
);

const pgServer = inject('batonPgUrl') || undefined;
const dropped: (() => Promise<void>)[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await Promise.all(dropped.map((drop) => drop()));
  rmSync(dir, { recursive: true, force: true });
});

let made = 0;
/** A fresh ledger URL on the driver. */
async function freshLedger(driver: 'SQLite' | 'PostgreSQL'): Promise<string> {
  if (driver === 'SQLite') return `sqlite:${join(dir, `ledger-${++made}.db`)}`;
  const { url, drop } = await createTestDatabase(pgServer!);
  dropped.push(drop);
  return url;
}

/** Every row of every table of the database, as `table.column` → values. */
async function dump(url: string): Promise<Map<string, unknown[]>> {
  const columns = new Map<string, unknown[]>();
  const add = (table: string, row: Record<string, unknown>) => {
    for (const [column, value] of Object.entries(row)) {
      const where = `${table}.${column}`;
      columns.set(where, [...(columns.get(where) ?? []), value]);
    }
  };
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    try {
      const tables = db.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[];
      for (const { name } of tables) {
        for (const row of db.prepare(`select * from "${name}"`).all()) add(name, row as Record<string, unknown>);
      }
    } finally {
      db.close();
    }
    return columns;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ table_schema: string; table_name: string }>(
      "select table_schema, table_name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')",
    );
    for (const { table_schema, table_name } of tables.rows) {
      const rows = await client.query(`select * from "${table_schema}"."${table_name}"`);
      for (const row of rows.rows) add(table_name, row);
    }
  } finally {
    await client.end();
  }
  return columns;
}

/** Where (`table.column`) each principal appears in clear, anywhere in a value. */
async function whereInClear(url: string, principals: readonly string[]): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {};
  for (const [where, values] of await dump(url)) {
    for (const principal of principals) {
      if (values.some((value) => value !== null && String(value).includes(principal))) {
        found[principal] = [...(found[principal] ?? []), where];
      }
    }
  }
  for (const list of Object.values(found)) list.sort();
  return found;
}

describe.each(['SQLite', 'PostgreSQL'] as const)('on %s', (driver) => {
  const available = driver === 'SQLite' || pgServer !== undefined;

  describe.each([false, true])('through baton serve, names stored: %s', (named) => {
    it.skipIf(!available)(
      named
        ? 'holds the readable ids only in the name columns'
        : 'holds no readable principal in any column of any table',
      async () => {
        const ledger = await freshLedger(driver);
        const server: ServeProcess = await startServe(
          [
            'examples/approvals',
            '--http',
            '127.0.0.1:0',
            '--ledger',
            ledger,
            '--audit',
            '--auth-tokens',
            tokensFile,
            '--wait-in-call',
            '1',
            ...(named ? ['--store-principal-names'] : []),
          ],
          { BATON_KEYS },
        );
        try {
          const as = async (principal: string, approve?: boolean) => {
            const connected = await connectHttp(server.url, {
              token: token(principal),
              ...(approve === undefined
                ? {}
                : { elicit: () => ({ action: 'accept' as const, content: { approve, comment: 'seen' } }) }),
            });
            clients.push(connected.client);
            return connected.client;
          };
          const request = async (amount: number) => {
            const result = await (await as(ALICE)).callTool({
              name: 'expense_approval',
              arguments: { amount, purpose: 'books' },
            });
            expect(result.isError).toBeFalsy();
            return (result.structuredContent as { id: string }).id;
          };
          const decide = async (principal: string, id: string) => {
            const result = await (await as(principal, true)).callTool({ name: 'baton_decide', arguments: { id } });
            expect(textOf(result)).toMatch(/^Recorded/);
          };
          // One decided by the manager, one by the manager and finance, one still waiting.
          const small = await request(250);
          await decide(BOB, small);
          const large = await request(5000);
          await decide(BOB, large);
          await decide(CAROL, large);
          await request(300);
          for (const id of [small, large]) {
            const done = await (await as(ALICE)).callTool({ name: 'baton_resume', arguments: { id } });
            expect(textOf(done)).toContain('approved');
          }
        } finally {
          expect(await server.stop()).toBe(0);
        }
        const found = await whereInClear(ledger, PRINCIPALS);
        if (!named) {
          expect(found).toEqual({});
          return;
        }
        expect(found).toEqual({
          [ALICE]: ['baton_audit.principal_name', 'baton_requests.requester_name'],
          [BOB]: ['baton_audit.principal_name', 'baton_decisions.decider_name'],
          [CAROL]: ['baton_audit.principal_name', 'baton_decisions.decider_name'],
        });
      },
    );
  });

  it.skipIf(!available)(
    'upgrades schema 5 decisions with a clear decider: rewritten as keyed hashes, and the flow still continues',
    async () => {
      const url = await freshLedger(driver);
      const codec = createRequestStateCodec({ keys: createKeyRing([BATON_KEYS]) });
      const open = async (): Promise<FullLedger> =>
        driver === 'SQLite'
          ? createSqliteLedger({ path: url.slice('sqlite:'.length), pruneIntervalMs: 0 })
          : createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
      const alice: CallContext = { principal: ALICE, method: 'tools/call', target: 'expense_approval' };
      const text = (outcome: RoundOutcome) =>
        outcome.type === 'complete' ? JSON.stringify(outcome.result.content) : JSON.stringify(outcome);

      // Two requests as schema 5 left them: one decided and ended, one whose decision was recorded
      // but not yet delivered to its flow (it continues on the requester's next round).
      const before = await open();
      const runner = createRunner({ flows: [expenseApproval], codec, ledger: before, holdMs: 0, waitInCallSeconds: 0 });
      const start = async () => {
        const first = await runner.run({
          flow: 'expense_approval',
          args: { amount: 250, purpose: 'books' },
          context: alice,
        });
        expect(text(first)).toContain('Waiting for a decision');
        return first.fid;
      };
      const ended = await start();
      const waiting = await start();
      await before.close();
      const legacy = (id: string) =>
        codec.sealBlob(
          JSON.stringify({ approve: true, comment: 'fine' }),
          'decision',
          JSON.stringify(['decision', id, 'manager_approval', BOB]),
        );
      const downgrade = [
        `update baton_decisions set status = 'decided', decider = '${BOB}', content = '${legacy(ended)}', decided_at = 1 where id = '${ended}'`,
        `update baton_decisions set status = 'decided', decider = '${BOB}', content = '${legacy(waiting)}', decided_at = 1 where id = '${waiting}'`,
        `update baton_requests set status = 'completed', waiting_for = '[]' where id = '${ended}'`,
        'alter table baton_decisions drop column decider_name',
        // Schema 7 (the audit trail's `via`) came after: undone too, back to 5.
        'alter table baton_audit drop column via',
        // And schema 8 (timers and the outbox).
        'drop index baton_requests_due_at_idx',
        'alter table baton_requests drop column due_at',
        'alter table baton_requests drop column lease_owner',
        'alter table baton_requests drop column lease_until',
        'drop table baton_outbox',
        // And schema 9 (events).
        'drop table baton_event_waits',
        'drop table baton_events',
        // And schema 10 (the runs list's index) and 11 (quorum votes, a decision's display name and channel).
        'drop index baton_requests_updated_at_id_idx',
        'drop table baton_decision_votes',
        'alter table baton_decisions drop column decider_display',
        'alter table baton_decisions drop column via',
        // And schema 12 (delegation).
        'drop index baton_decisions_assignee_idx',
        'alter table baton_decisions drop column assignee',
        'alter table baton_decisions drop column handover',
        'alter table baton_decisions drop column on_behalf_of',
        'alter table baton_decisions drop column on_behalf_of_name',
        'drop table baton_delegations',
        `update baton_meta set value = '5' where key = 'schema_version'`,
      ];
      if (driver === 'SQLite') {
        const db = new Database(url.slice('sqlite:'.length));
        for (const statement of downgrade) db.exec(statement);
        // The migrations past 0005 (the first six are 0000 to 0005).
        db.exec(
          'delete from __baton_migrations where created_at > (select created_at from __baton_migrations order by created_at limit 1 offset 5)',
        );
        db.close();
      } else {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        for (const statement of downgrade) await client.query(statement);
        await client.query(
          'delete from drizzle.__baton_migrations where created_at > (select created_at from drizzle.__baton_migrations order by created_at limit 1 offset 5)',
        );
        await client.end();
      }
      expect(Object.keys(await whereInClear(url, [BOB]))).toEqual([BOB]);

      // The current version migrates (the clear value moves to decider_name) and its runner rewrites.
      const after = await open();
      try {
        const logged: string[] = [];
        const upgraded = createRunner({
          flows: [expenseApproval],
          codec,
          ledger: after,
          holdMs: 0,
          waitInCallSeconds: 0,
          log: (event) => {
            if (event.type === 'ledger_upgrade') logged.push(`rewrote ${event.rewritten}`);
          },
        });
        const until = Date.now() + 10_000;
        while (logged.length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
        expect(logged).toEqual(['rewrote 2']);
        expect(await whereInClear(url, PRINCIPALS)).toEqual({});
        const decided = await after.decisions.listDecisions({ id: ended });
        expect(decided).toMatchObject([
          { status: 'decided', decider: expect.stringMatching(/^[A-Za-z0-9_-]{20,}$/), deciderName: null },
        ]);
        // The decision recorded before the upgrade still reaches its flow.
        const resumed = await upgraded.resume({ id: waiting, context: { principal: ALICE } });
        expect(text(resumed)).toContain('approved');
        expect(await whereInClear(url, PRINCIPALS)).toEqual({});
        // Once rewritten, nothing is left to rewrite.
        expect(
          await after.decisions.rewriteLegacyDeciders(() => ({ decider: 'x', deciderName: null, content: null })),
        ).toBe(0);
        // And the ledger says so: later starts read this one baton_meta row instead of scanning decisions.
        const flag = "select value from baton_meta where key = 'legacy_deciders_rewritten'";
        if (driver === 'SQLite') {
          const db = new Database(url.slice('sqlite:'.length), { readonly: true });
          expect(db.prepare(flag).all()).toEqual([{ value: '1' }]);
          db.close();
        } else {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          expect((await client.query(flag)).rows).toEqual([{ value: '1' }]);
          await client.end();
        }
      } finally {
        await after.close();
      }
    },
  );
});
