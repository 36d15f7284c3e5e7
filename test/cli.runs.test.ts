/**
 * `baton runs` against real ledgers: two `baton serve` instances of
 * examples/approvals share one ledger (a SQLite file, then a fresh
 * PostgreSQL database) with `--audit` and stored principal names; alice and
 * carol ask for expenses over HTTP, bob decides one. Then the CLI, run as a
 * separate process on the same database, lists runs by every filter and
 * pages them with its cursor, shows one run with its decision and audit
 * timeline, and refuses bad flags in one line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase } from '../packages/store/test/helpers/postgres.js';
import { connectHttp, runCli, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-runs-'));
const BATON_KEYS = generateKey();
const token = (name: string) => `${name}-token-${'x'.repeat(24)}`;
const tokensFile = join(dir, 'tokens.json');
writeFileSync(
  tokensFile,
  JSON.stringify({
    [token('alice')]: { principal: 'alice', roles: [] },
    [token('carol')]: { principal: 'carol', roles: [] },
    [token('bob')]: { principal: 'bob', roles: ['manager'] },
  }),
);
const pgServer = inject('batonPgUrl') || undefined;
const dropped: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(dropped.map((drop) => drop()));
  rmSync(dir, { recursive: true, force: true });
});

interface RunJson {
  id: string;
  flow: string;
  status: string;
  requester: string;
  requesterName: string | null;
  waitingFor: { key: string; role?: string }[];
}

describe.each(['SQLite', 'PostgreSQL'] as const)('baton runs on %s', (driver) => {
  const available = driver === 'SQLite' || pgServer !== undefined;
  let ledger = '';
  let servers: ServeProcess[] = [];
  const clients: Client[] = [];
  const ids = { alice1: '', alice2: '', carol: '' };

  const as = async (server: ServeProcess, principal: string, approve?: boolean) => {
    const { client } = await connectHttp(server.url, {
      token: token(principal),
      ...(approve === undefined
        ? {}
        : { elicit: () => ({ action: 'accept' as const, content: { approve, comment: 'ok' } }) }),
    });
    clients.push(client);
    return client;
  };
  const request = async (server: ServeProcess, principal: string, amount: number) => {
    const result = await (await as(server, principal)).callTool({
      name: 'expense_approval',
      arguments: { amount, purpose: 'books' },
    });
    expect(result.isError).toBeFalsy();
    return (result.structuredContent as { id: string }).id;
  };
  const runs = (...args: string[]) => runCli(['runs', ...args, '--ledger', ledger], { BATON_KEYS });
  const listJson = async (...args: string[]) => {
    const out = await runs('list', '--json', ...args);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    return JSON.parse(out.stdout) as { runs: RunJson[]; cursor: string | null };
  };

  beforeAll(async () => {
    if (!available) return;
    if (driver === 'SQLite') ledger = `sqlite:${join(dir, 'ledger.db')}`;
    else {
      const database = await createTestDatabase(pgServer!);
      dropped.push(database.drop);
      ledger = database.url;
    }
    const args = ['examples/approvals', '--http', '127.0.0.1:0', '--ledger', ledger, '--audit'];
    const rest = ['--auth-tokens', tokensFile, '--wait-in-call', '0', '--store-principal-names'];
    servers = [await startServe([...args, ...rest], { BATON_KEYS })];
    servers.push(await startServe([...args, ...rest], { BATON_KEYS }));
    ids.alice1 = await request(servers[0]!, 'alice', 250);
    ids.carol = await request(servers[1]!, 'carol', 300);
    ids.alice2 = await request(servers[1]!, 'alice', 400);
    const decided = await (await as(servers[1]!, 'bob', true)).callTool({
      name: 'baton_decide',
      arguments: { id: ids.alice1 },
    });
    expect(textOf(decided)).toMatch(/^Recorded/);
  });
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(servers.map((server) => server.stop()));
  });

  it.skipIf(!available)('lists runs by flow, status, requester and age, paged by its cursor', async () => {
    const all = await listJson();
    expect(all.runs.map((r) => r.id).sort()).toEqual(Object.values(ids).sort());
    expect(all.cursor).toBeNull();
    // Newest write first: bob's decision wrote alice's first request last.
    expect(all.runs[0]!.id).toBe(ids.alice1);
    expect(all.runs.find((r) => r.id === ids.alice1)!.status).toBe('completed');
    expect(all.runs.find((r) => r.id === ids.carol)).toMatchObject({
      status: 'waiting',
      waitingFor: [{ key: 'manager_approval', role: 'manager' }],
      requesterName: 'carol',
    });

    const first = await listJson('--limit', '2');
    expect(first.runs).toHaveLength(2);
    expect(first.cursor).toEqual(expect.any(String));
    const second = await listJson('--limit', '2', '--cursor', first.cursor!);
    expect(second.cursor).toBeNull();
    expect([...first.runs, ...second.runs].map((r) => r.id)).toEqual(all.runs.map((r) => r.id));

    expect((await listJson('--status', 'waiting')).runs.map((r) => r.id).sort()).toEqual(
      [ids.carol, ids.alice2].sort(),
    );
    expect((await listJson('--requester', 'alice')).runs.map((r) => r.id).sort()).toEqual(
      [ids.alice1, ids.alice2].sort(),
    );
    const carolHash = all.runs.find((r) => r.id === ids.carol)!.requester;
    expect(carolHash).not.toBe('carol');
    expect((await listJson('--requester', carolHash)).runs.map((r) => r.id)).toEqual([ids.carol]);
    expect((await listJson('--flow', 'refund_request')).runs).toEqual([]);
    expect((await listJson('--since', '1h', '--started-since', '1h')).runs).toHaveLength(3);
    expect((await listJson('--since', new Date(Date.now() + 3_600_000).toISOString())).runs).toEqual([]);

    const table = await runs('list', '--status', 'waiting');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +FLOW +STATUS +WAITING FOR +REQUESTER +STARTED +UPDATED$/);
    expect(lines.slice(1).find((l) => l.startsWith(ids.carol))).toMatch(
      /expense_approval +waiting +manager_approval \(manager\) +carol /,
    );
  });

  it.skipIf(!available)('shows a run: its decision, and the audit timeline of both instances', async () => {
    const out = await runs('show', ids.alice1, '--json');
    expect(out.code).toBe(0);
    const shown = JSON.parse(out.stdout);
    expect(shown.run).toMatchObject({ id: ids.alice1, status: 'completed', requesterName: 'alice' });
    expect(shown.decisions).toEqual([
      expect.objectContaining({ key: 'manager_approval', status: 'decided', deciderName: 'bob' }),
    ]);
    expect(shown.audit.map((e: { via: string; principal: string }) => [e.via, e.principal])).toEqual([
      ['call', 'alice'],
      ['decide', 'bob'],
    ]);
    const text = await runs('show', ids.carol);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`run ${ids.carol} (expense_approval): waiting`);
    expect(text.stdout).toContain('waiting for: manager_approval (manager)');
    expect(text.stdout).toMatch(/decisions:\n {2}manager_approval \[manager\]: pending/);
  });

  it.skipIf(!available)('refuses bad flags and unknown runs in one line', async () => {
    for (const [args, code, message] of [
      [['list', '--limit', '0'], 2, /^baton: --limit expects 1 to 1000, got "0"\n$/],
      [['list', '--status', 'stuck'], 2, /^baton: --status expects one of waiting, completed/],
      [['list', '--since', 'yesterday'], 2, /^baton: --since expects a duration/],
      [['list', '--cursor', 'nope'], 2, /^baton: --cursor is not a cursor this command printed/],
      [['lst'], 2, /^baton: unknown subcommand "lst"/],
      [['list', '--flw', 'x'], 2, /^baton: unknown option --flw: did you mean --flow/],
      [['show', 'R-nope'], 1, /^baton: no run "R-nope" in this ledger\n$/],
    ] as const) {
      const out = await runs(...args);
      expect(out.stderr, args.join(' ')).toMatch(message);
      expect(out.stderr.split('\n')).toHaveLength(2);
      expect(out.code).toBe(code);
    }
  });
});
