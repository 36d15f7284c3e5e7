/**
 * `baton runs` against real ledgers: two `baton serve` instances (the
 * approvals examples plus a flow with no withdrawal path) share one ledger (a
 * SQLite file, then a fresh PostgreSQL database) with `--audit` and stored
 * principal names; alice and carol ask over HTTP, bob decides one. The CLI
 * then lists runs by every filter and pages them with its cursor, shows one
 * run with its decision and audit timeline, cancels one through its flow's
 * withdrawal, refuses to cancel one that has none and terminates it, and
 * races a cancel against a terminate from two processes: exactly one wins,
 * the other says what won; the ledger, the audit trail and the requester's
 * own tools agree. A durable step that outlived its call and then failed for
 * good is retried with `retry-step` (refused while it runs, for a run that
 * waits on no step and for one that ended): a server's scheduler runs it
 * again under the same idempotency key, and the requester's `baton_resume`
 * gets the charge. Most listing calls run the command in this process (the
 * same `run` the binary calls); the ones that matter run the real binary, and
 * every cancel does (a flows module loaded under vitest's transform has
 * another definition hash than the servers').
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { reportFailure } from '../packages/adapters/src/cli/cliError.js';
import { run as runsCommand } from '../packages/adapters/src/cli/runs.js';
import { createTestDatabase } from '../packages/store/test/helpers/postgres.js';
import { connectHttp, runCli, type ServeProcess, sleep, startServe, textOf } from './helpers/mcpClients.js';
import { continueUntilDone } from './helpers/stepFlows.js';

const FLOWS = 'test/fixtures/operator-flows';
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

/** `baton runs ...` in this process: its exit code and what it wrote. */
async function inProcess(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const write = { out: process.stdout.write, err: process.stderr.write };
  process.stdout.write = ((chunk: string) => out.push(String(chunk)) > 0) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string) => err.push(String(chunk)) > 0) as typeof process.stderr.write;
  const saved = process.env.BATON_KEYS;
  process.env.BATON_KEYS = BATON_KEYS;
  let code: number;
  try {
    code = await runsCommand([...args]);
  } catch (error) {
    code = reportFailure(error);
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
    process.env.BATON_KEYS = saved;
  }
  return { code, stdout: out.join(''), stderr: err.join('') };
}

interface RunJson {
  id: string;
  flow: string;
  status: string;
  requester: string;
  requesterName: string | null;
  waitingFor: { key: string; role?: string }[];
}

interface AuditJson {
  via: string;
  principal: string;
  outcome: string;
  message?: string;
}

describe.each(['SQLite', 'PostgreSQL'] as const)('baton runs on %s', (driver) => {
  const available = driver === 'SQLite' || pgServer !== undefined;
  let ledger = '';
  let servers: ServeProcess[] = [];
  const clients: Client[] = [];
  const ids = { alice1: '', alice2: '', carol: '', review: '', race: '' };

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
  const request = async (server: ServeProcess, principal: string, amount?: number) => {
    const result = await (await as(server, principal)).callTool(
      amount === undefined
        ? { name: 'security_review', arguments: {} }
        : { name: 'expense_approval', arguments: { amount, purpose: 'books' } },
    );
    expect(result.isError).toBeFalsy();
    return (result.structuredContent as { id: string }).id;
  };
  const spawned = (...args: string[]) => runCli(['runs', ...args, '--ledger', ledger], { BATON_KEYS });
  const runs = (...args: string[]) => inProcess([...args, '--ledger', ledger]);
  const listJson = async (...args: string[]) => {
    const out = await runs('list', '--json', ...args);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    return JSON.parse(out.stdout) as { runs: RunJson[]; cursor: string | null };
  };
  const showJson = async (id: string) => {
    const out = await runs('show', id, '--json');
    expect(out.code).toBe(0);
    return JSON.parse(out.stdout) as { run: RunJson; audit: AuditJson[]; decisions: { status: string }[] };
  };
  const operator = ['--as', 'ops', '--store-principal-names'];
  const stepLog = join(dir, `steps-${driver}.log`);
  const chargeOk = join(dir, `charge-ok-${driver}`);

  beforeAll(async () => {
    if (!available) return;
    if (driver === 'SQLite') ledger = `sqlite:${join(dir, 'ledger.db')}`;
    else {
      const database = await createTestDatabase(pgServer!);
      dropped.push(database.drop);
      ledger = database.url;
    }
    const args = [FLOWS, '--http', '127.0.0.1:0', '--ledger', ledger, '--audit', '--auth-tokens', tokensFile];
    // A round budget shorter than flaky_charge's step, so its call parks the run on the step.
    const rest = ['--wait-in-call', '0', '--store-principal-names', '--round-budget', '200'];
    const env = { BATON_KEYS, BATON_STEP_LOG: stepLog, BATON_CHARGE_OK: chargeOk };
    servers = [await startServe([...args, ...rest], env)];
    servers.push(await startServe([...args, ...rest], env));
    ids.alice1 = await request(servers[0]!, 'alice', 250);
    ids.carol = await request(servers[1]!, 'carol', 300);
    ids.alice2 = await request(servers[1]!, 'alice', 400);
    ids.review = await request(servers[0]!, 'alice');
    ids.race = await request(servers[0]!, 'alice', 500);
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

    const first = await listJson('--limit', '3');
    expect(first.runs).toHaveLength(3);
    expect(first.cursor).toEqual(expect.any(String));
    const second = await listJson('--limit', '3', '--cursor', first.cursor!);
    expect(second.cursor).toBeNull();
    expect([...first.runs, ...second.runs].map((r) => r.id)).toEqual(all.runs.map((r) => r.id));

    const ofIds = async (...args: string[]) => (await listJson(...args)).runs.map((r) => r.id).sort();
    expect(await ofIds('--status', 'completed')).toEqual([ids.alice1]);
    expect(await ofIds('--flow', 'security_review')).toEqual([ids.review]);
    expect(await ofIds('--requester', 'carol')).toEqual([ids.carol]);
    const carolHash = all.runs.find((r) => r.id === ids.carol)!.requester;
    expect(carolHash).not.toBe('carol');
    expect(await ofIds('--requester', carolHash)).toEqual([ids.carol]);
    expect(await ofIds('--flow', 'expense_approval', '--requester', 'alice', '--status', 'waiting')).toEqual(
      [ids.alice2, ids.race].sort(),
    );
    expect(await ofIds('--since', '1h', '--started-since', '1h')).toHaveLength(5);
    expect(await ofIds('--since', new Date(Date.now() + 3_600_000).toISOString())).toEqual([]);

    const table = await spawned('list', '--requester', 'carol');
    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +FLOW +STATUS +WAITING FOR +REQUESTER +STARTED +UPDATED$/);
    expect(lines[1]).toMatch(
      new RegExp(`^${ids.carol} +expense_approval +waiting +manager_approval \\(manager\\) +carol `),
    );
    expect(lines).toHaveLength(2);
  });

  it.skipIf(!available)('shows a run: its decision, and the audit timeline of both instances', async () => {
    const shown = await showJson(ids.alice1);
    expect(shown.run).toMatchObject({ id: ids.alice1, status: 'completed', requesterName: 'alice' });
    expect(shown.decisions).toEqual([
      expect.objectContaining({ key: 'manager_approval', status: 'decided', deciderName: 'bob' }),
    ]);
    expect(shown.audit.map((e) => [e.via, e.principal])).toEqual([
      ['call', 'alice'],
      ['decide', 'bob'],
    ]);
    const text = await spawned('show', ids.carol);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`run ${ids.carol} (expense_approval): waiting`);
    expect(text.stdout).toContain('waiting for: manager_approval (manager)');
    expect(text.stdout).toMatch(/decisions:\n {2}manager_approval \[manager\]: pending/);
  });

  it.skipIf(!available)(
    'cancels through the withdrawal, or refuses and terminates, audited as the operator',
    async () => {
      const cancelled = await spawned('cancel', ids.carol, FLOWS, '--reason', 'duplicate expense', ...operator);
      expect(cancelled.stderr).toBe('');
      expect(cancelled.stdout).toMatch(new RegExp(`^Withdrawn: request ${ids.carol} \\(expense_approval\\)`));
      expect(cancelled.code).toBe(0);
      const carol = await showJson(ids.carol);
      expect(carol.run.status).toBe('withdrawn');
      expect(carol.decisions).toEqual([expect.objectContaining({ status: 'closed' })]);
      expect(carol.audit.at(-1)).toMatchObject({ via: 'operator', principal: 'ops', message: 'duplicate expense' });
      const mine = await (await as(servers[1]!, 'carol')).callTool({ name: 'baton_requests', arguments: {} });
      expect(mine.structuredContent).toEqual({
        requests: [{ id: ids.carol, flow: 'expense_approval', status: 'withdrawn' }],
      });

      const refused = await spawned('cancel', ids.review, FLOWS, '--reason', 'stuck', ...operator);
      expect(refused.stderr).toMatch(
        /^baton: Request \S+ cannot be withdrawn now: "security_review" has no withdrawal path/,
      );
      expect(refused.stderr.split('\n')).toHaveLength(2);
      expect(refused.code).toBe(1);
      expect((await showJson(ids.review)).run.status).toBe('waiting');

      const ended = await runs('terminate', ids.review, '--reason', 'reviewer left', ...operator);
      expect(ended.stdout).toMatch(
        /^Terminated: run \S+ \(security_review\)\. Terminated by an operator: reviewer left/,
      );
      expect(ended.code).toBe(0);
      const review = await showJson(ids.review);
      expect(review.run.status).toBe('terminated');
      expect(review.decisions).toEqual([expect.objectContaining({ status: 'closed' })]);
      expect(review.audit.at(-1)).toMatchObject({
        via: 'operator',
        principal: 'ops',
        outcome: 'error',
        message: 'reviewer left',
      });
      const resumed = await (await as(servers[1]!, 'alice')).callTool({
        name: 'baton_resume',
        arguments: { id: ids.review },
      });
      expect(resumed.isError).toBe(true);
      expect(textOf(resumed)).toContain('Terminated by an operator: reviewer left');
      const again = await runs('terminate', ids.review, '--reason', 'twice', ...operator);
      expect(again.stderr).toMatch(
        /^baton: Not terminated: run \S+ was terminated already: Terminated by an operator: reviewer left\n$/,
      );
      expect(again.code).toBe(1);
    },
  );

  it.skipIf(!available)(
    'a cancel and a terminate racing from two processes: one wins, the other says what',
    async () => {
      const [cancel, terminate] = await Promise.all([
        spawned('cancel', ids.race, FLOWS, '--reason', 'race: cancel', ...operator),
        spawned('terminate', ids.race, '--reason', 'race: terminate', ...operator),
      ]);
      expect([cancel.code, terminate.code].sort()).toEqual([0, 1]);
      const race = await showJson(ids.race);
      const operatorEntries = race.audit.filter((e) => e.via === 'operator');
      expect(operatorEntries).toHaveLength(1);
      if (cancel.code === 0) {
        expect(race.run.status).toBe('withdrawn');
        expect(operatorEntries[0]!.message).toBe('race: cancel');
        expect(terminate.stderr).toMatch(
          /^baton: Not terminated: run \S+ ended \(withdrawn\) (first|already): Expense of 500 withdrawn/,
        );
      } else {
        expect(race.run.status).toBe('terminated');
        expect(operatorEntries[0]!.message).toBe('race: terminate');
        expect(cancel.stderr).toMatch(
          /^baton: Not withdrawn: request \S+ has ended.*Terminated by an operator: race: terminate/,
        );
      }
    },
  );

  it.skipIf(!available)(
    'retry-step runs a step whose retries ran out again, with the same idempotency key, audited; refuses otherwise',
    async () => {
      writeFileSync(stepLog, '');
      const alice = await as(servers[0]!, 'alice');
      const called = await alice.callTool({ name: 'flaky_charge', arguments: { order: `o-${driver}` } });
      expect(called.structuredContent).toMatchObject({ status: 'working' });
      const id = (called.structuredContent as { id: string }).id;
      const retry = (step: string, reason = 'processor back') =>
        runs('retry-step', id, step, '--reason', reason, ...operator);

      // Still running (its first attempts): nothing to retry.
      const early = await retry('charge');
      expect(early.stderr).toMatch(
        new RegExp(
          `^baton: Not retried: step charge#0 of run ${id} has not failed: it is still running\\. Nothing changed\\.\n$`,
        ),
      );
      expect(early.code).toBe(1);
      // Two attempts, both failed: the run still waits on the step, whose record says failed.
      const stepsOf = async () =>
        (JSON.parse((await runs('show', id, '--json')).stdout) as { steps: { status: string }[] }).steps;
      const until = Date.now() + 30_000;
      while ((await stepsOf())[0]?.status !== 'failed') {
        if (Date.now() > until) throw new Error('the step did not fail in time');
        await sleep(100);
      }
      expect((await showJson(id)).run).toMatchObject({ status: 'waiting' });
      const unknown = await retry('ship');
      expect(unknown.stderr).toMatch(
        /^baton: Not retried: run \S+ does not wait on step ship#0\. Nothing changed\.\n$/,
      );
      const noStep = await runs('retry-step', ids.alice2, 'charge', '--reason', 'x', ...operator);
      expect(noStep.stderr).toMatch(
        /^baton: Not retried: run \S+ does not wait on a durable step \(it waits for manager_approval\)\. Nothing changed\.\n$/,
      );
      expect(noStep.code).toBe(1);

      // The operator fixed the processor, and retries: the step runs again, the requester gets the charge.
      writeFileSync(chargeOk, 'ok');
      const retried = await spawned('retry-step', id, 'charge', '--reason', 'processor back', ...operator);
      expect(retried.stderr).toBe('');
      expect(retried.stdout).toMatch(new RegExp(`^Retrying: step charge#0 of run ${id} \\(flaky_charge\\) runs again`));
      expect(retried.code).toBe(0);
      expect(await continueUntilDone(alice, id, 30_000)).toBe(`Charged CH-o-${driver}`);
      rmSync(chargeOk);

      const attempts = readFileSync(stepLog, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' '));
      expect(attempts.map((a) => a[2])).toEqual(['1', '2', '1']);
      expect(new Set(attempts.map((a) => a[1])).size).toBe(1);
      const shown = JSON.parse((await runs('show', id, '--json')).stdout) as {
        steps: { key: string; status: string; claims: number }[];
        audit: AuditJson[];
        run: RunJson;
      };
      expect(shown.run.status).toBe('completed');
      expect(shown.steps).toEqual([expect.objectContaining({ key: 'charge#0', status: 'succeeded' })]);
      expect(shown.audit.filter((e) => e.via === 'operator')).toEqual([
        expect.objectContaining({ principal: 'ops', message: 'retry-step charge#0: processor back' }),
      ]);
      const late = await retry('charge#0');
      expect(late.stderr).toMatch(/^baton: Not retried: run \S+ ended \(completed\) already: Charged CH-/);
      expect(late.code).toBe(1);
      expect(existsSync(chargeOk)).toBe(false);
    },
  );

  it.skipIf(!available || driver !== 'SQLite')('refuses bad flags and unknown runs in one line', async () => {
    for (const [args, code, message] of [
      [['list', '--limit', '0'], 2, /^baton: --limit expects 1 to 1000, got "0"/],
      [['list', '--status', 'stuck'], 2, /^baton: --status expects one of waiting, completed/],
      [['list', '--since', 'yesterday'], 2, /^baton: --since expects a duration/],
      [['list', '--cursor', 'nope'], 2, /^baton: --cursor is not a cursor this command printed/],
      [['list', '--flw', 'x'], 2, /^baton: unknown option --flw: did you mean --flow/],
      [['show'], 2, /^baton: missing <id>/],
      [['cancel', ids.alice2], 2, /^baton: missing <flows-module>/],
      [['terminate', ids.alice2], 2, /^baton: --reason TEXT is required/],
      [['retry-step', ids.alice2], 2, /^baton: missing <step>/],
      [['retry-step', ids.alice2, 'charge'], 2, /^baton: --reason TEXT is required/],
      [['show', 'R-nope'], 1, /^baton: no run "R-nope" in this ledger\n$/],
      [['terminate', 'R-nope', '--reason', 'x'], 1, /^baton: There is no run R-nope\.\n$/],
    ] as const) {
      const out = await runs(...args);
      expect(out.stderr, args.join(' ')).toMatch(message);
      expect(out.stderr.split('\n'), args.join(' ')).toHaveLength(2);
      expect(out.code, args.join(' ')).toBe(code);
    }
    const real = await spawned('lst');
    expect(real.stderr).toMatch(/^baton: unknown subcommand "lst" \(usage: baton runs/);
    expect(real.code).toBe(2);
  });
});
