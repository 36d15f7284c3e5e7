import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInspectHandler, describeInstance, flowGraph, serveInspect } from '@baton/adapters';
import { type AuditEntry, createRequestStateCodec, createRunner, generateKey, type ParkedRequest } from '@baton/engine';
import { allStates } from '@baton/engine/testing';
import { createMemoryLedger, openAuditLog, openLedger } from '@baton/store';
import { describe, expect, it } from 'vitest';
import approvals, { deployProduction, expenseApproval } from '../examples/approvals/index.js';
import { statesOf } from '../packages/adapters/src/inspect/flowGraph.js';
import { recordedInstance } from '../packages/adapters/src/inspect/recordedPath.js';
import { routedFlow } from '../packages/engine/test/fixtures/graphFlows.js';
import { DEPLOYED_FID, memoryAuditLog, recordedDeployEntries } from './helpers/auditFixtures.js';
import { recordInspectScenario } from './helpers/inspectScenario.js';
import { cliArgs, ROOT, runCli } from './helpers/mcpClients.js';
import { nested } from './helpers/nestedFlow.js';

/** A response's JSON body, untyped (the tests check its shape). */
const body = (response: Response): Promise<any> => response.json();

describe('flowGraph', () => {
  it('lists nested and parallel states with their parents, types and asks', () => {
    const graph = flowGraph(nested);
    expect(graph.rootType).toBe('compound');
    expect(graph.nodes.map((n) => n.id)).toEqual(allStates(nested));
    const byKey = Object.fromEntries(graph.nodes.map((n) => [n.key, n]));
    expect(byKey.gather).toMatchObject({ parent: null, type: 'parallel', initial: true, asks: [] });
    expect(byKey.left).toMatchObject({ parent: 'nested_demo.gather', type: 'compound' });
    expect(byKey.askName).toMatchObject({
      parent: 'nested_demo.gather.left',
      type: 'atomic',
      initial: true,
      asks: [{ key: 'name', kind: 'form' }],
    });
    expect(byKey.waiting!.asks).toEqual([{ key: 'colour', kind: 'form' }]);
    expect(byKey.timedOut).toMatchObject({ type: 'final', initial: false });
    expect(byKey.done).toMatchObject({ parent: null, type: 'final' });
  });

  it('lists every transition with a readable label', () => {
    const edges = flowGraph(nested).edges.map(({ source, target, label }) => ({ source, target, label }));
    expect(edges).toEqual(
      expect.arrayContaining([
        { source: 'nested_demo.gather.left.askName', target: 'nested_demo.gather.left.named', label: 'input.name' },
        {
          source: 'nested_demo.gather.right.waiting',
          target: 'nested_demo.gather.right.timedOut',
          label: 'after 1 min',
        },
        { source: 'nested_demo.gather', target: 'nested_demo.done', label: 'done' },
      ]),
    );
    expect(new Set(flowGraph(nested).edges.map((e) => e.id)).size).toBe(edges.length);
  });

  it('describes deploy_production: guarded answers, the deadline and the asking states', () => {
    const graph = flowGraph(deployProduction);
    expect(graph.nodes.filter((n) => n.asks.length > 0).map((n) => n.key)).toEqual([
      'awaitingCi',
      'awaitingApproval',
      'confirmed',
    ]);
    const labels = graph.edges.map((e) => `${e.source.split('.').pop()}->${e.target.split('.').pop()}: ${e.label}`);
    expect(labels).toContain('planning->awaitingApproval: done computePlan');
    expect(labels).toContain('awaitingApproval->expired: after 15 min');
    expect(labels).toContain('awaitingApproval->confirmed: input.confirm_deploy [guarded]');
    expect(labels).toContain('awaitingApproval->cancelled: input.confirm_deploy');
    // With a commit, the wait for CI comes first (its timeout a plain `after`).
    expect(labels).toContain('awaitingCi->ciTimedOut: after 30 min');
    expect(labels).toContain('awaitingCi->awaitingApproval: input.ci [guarded]');
    expect(JSON.parse(JSON.stringify(graph))).toEqual(graph);
  });

  it('draws the graph model: always, deadlines, done and error edges; root-level ones from "any state"', () => {
    const graph = flowGraph(routedFlow);
    const edges = graph.edges.map(({ source, target, label }) => `${source} -> ${target} : ${label}`);
    expect(graph.anyState).toBe('routed');
    expect(edges).toEqual([
      'routed -> routed.cancelled : cancel',
      'routed -> routed.asking : admin.reset [isBig]',
      'routed -> routed.cancelled : after 24 h',
      'routed.asking -> routed.route : input.details',
      'routed.route -> routed.approval : always [isBig]',
      'routed.route -> routed.checking : always',
      'routed.approval -> routed.checking : input.manager_approval',
      'routed.approval -> routed.cancelled : after 15 min',
      'routed.approval -> routed.approval : after 1 min',
      'routed.checking -> routed.done : done check',
      'routed.checking -> routed.failed : error check',
    ]);
    expect(graph.edges.map((e) => e.kind)).toEqual([
      'root-on',
      'root-on',
      'after',
      'event',
      'always',
      'always',
      'event',
      'after',
      'after',
      'done',
      'error',
    ]);
    expect(flowGraph(deployProduction).anyState).toBeNull();
    expect(graph.edges.map((e) => e.id)).toEqual(edges.map((_, i) => `e${i}`));
    const ids = new Set([...graph.nodes.map((n) => n.id), graph.anyState]);
    for (const edge of graph.edges) expect(ids.has(edge.source) && ids.has(edge.target)).toBe(true);
    expect(graph.nodes.find((n) => n.key === 'approval')).toEqual({
      id: 'routed.approval',
      key: 'approval',
      parent: null,
      type: 'atomic',
      initial: false,
      asks: [{ key: 'manager_approval', kind: 'decision' }],
    });
    expect(graph.nodes.find((n) => n.key === 'asking')!.initial).toBe(true);
  });

  it('maps state values to state ids, parallel ones included', () => {
    expect(statesOf(nested, { gather: { left: 'named', right: 'waiting' } })).toEqual([
      'nested_demo.gather',
      'nested_demo.gather.left',
      'nested_demo.gather.left.named',
      'nested_demo.gather.right',
      'nested_demo.gather.right.waiting',
    ]);
    expect(statesOf(nested, null)).toEqual([]);
  });

  it('lays a recorded instance onto the graph: visited states and transitions taken', () => {
    const graph = flowGraph(deployProduction);
    const rounds = recordedDeployEntries().filter((e) => e.fid === DEPLOYED_FID);
    const recorded = recordedInstance(deployProduction, graph, rounds);
    const edge = (id: string) => {
      const e = graph.edges.find((x) => x.id === id)!;
      return `${e.source.split('.').pop()}->${e.target.split('.').pop()}: ${e.label}`;
    };
    expect(recorded.currentDefinition).toBe(true);
    expect(recorded.rounds[0]!.edges.map(edge)).toEqual(['planning->awaitingApproval: done computePlan']);
    expect(recorded.rounds[1]!.edges.map(edge)).toEqual([
      'awaitingApproval->confirmed: input.confirm_deploy [guarded]',
      'confirmed->deployed: input.change_ticket [guarded]',
    ]);
    expect(recorded.visited.map((id) => id.split('.').pop())).toEqual([
      'planning',
      'awaitingApproval',
      'confirmed',
      'deployed',
    ]);
  });
});

describe('inspect endpoints', () => {
  const audit = memoryAuditLog(recordedDeployEntries());
  const handler = createInspectHandler({ flows: approvals, audit });
  const get = (path: string, headers: Record<string, string> = { host: '127.0.0.1:4000' }) =>
    handler.fetch(new Request(`http://127.0.0.1:4000${path}`, { headers }));

  it('lists the flows and serves each graph', async () => {
    const flows = await body(await get('/api/flows'));
    expect(flows.audit).toBe(true);
    expect(flows.flows.map((f: { name: string }) => f.name)).toEqual(approvals.map((f) => f.name));
    const deploy = flows.flows.find((f: { name: string }) => f.name === 'deploy_production');
    expect(deploy).toMatchObject({ states: 9, asks: ['ci', 'confirm_deploy', 'change_ticket'] });
    const graph = await get('/api/flows/deploy_production/graph');
    expect(graph.status).toBe(200);
    const served = await body(graph);
    expect({ ...served, layout: undefined }).toEqual({ ...flowGraph(deployProduction), layout: undefined });
    expect(Object.keys(served.layout.nodes).sort()).toEqual(allStates(deployProduction).sort());
    expect(Object.keys(served.layout.edges)).toEqual(served.edges.map((e: { id: string }) => e.id));
    expect((await get('/api/flows/nope/graph')).status).toBe(404);
  });

  it('lists instances newest first and maps one onto its graph', async () => {
    const list = await body(await get('/api/instances?flow=deploy_production'));
    expect(list.instances.map((i: { fid: string }) => i.fid)).toEqual([DEPLOYED_FID, 'fi_deploy_no_Zk31']);
    expect((await body(await get('/api/instances?flow=expense_approval'))).instances).toEqual([]);
    const one = await body(await get(`/api/instances/${DEPLOYED_FID}`));
    expect(one).toMatchObject({ fid: DEPLOYED_FID, flow: 'deploy_production', known: true, currentDefinition: true });
    expect(one.rounds.map((r: { round: number; outcome: string }) => [r.round, r.outcome])).toEqual([
      [1, 'input_required'],
      [2, 'complete'],
    ]);
    expect((await get('/api/instances/unknown')).status).toBe(404);
    expect((await get('/api/instances?limit=0')).status).toBe(400);
  });

  it('serves the page and its assets with a strict CSP and nothing from elsewhere', async () => {
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of ['/inspect.js', '/inspect.css']) {
      const res = await get(asset);
      expect(res.status).toBe(200);
      expect((await res.text()).length).toBeGreaterThan(100);
    }
  });

  it('answers 403 to a foreign Host or Origin and 405 to anything but GET', async () => {
    expect((await get('/api/flows', { host: 'evil.example:4000' })).status).toBe(403);
    expect((await get('/', { host: 'attacker.test' })).status).toBe(403);
    expect((await get('/api/flows', { host: '127.0.0.1:4000', origin: 'http://evil.example' })).status).toBe(403);
    expect((await get('/api/flows', { host: 'localhost:4000' })).status).toBe(200);
    const post = await handler.fetch(
      new Request('http://127.0.0.1:4000/api/flows', { method: 'POST', headers: { host: '127.0.0.1:4000' } }),
    );
    expect(post.status).toBe(405);
    expect(post.headers.get('content-type')).toBe('application/problem+json');
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    // The JSON endpoints' errors are problem details too.
    const unknown = await get('/api/flows/nope/graph');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('application/problem+json');
    expect(await body(unknown)).toMatchObject({ status: 404, detail: 'no flow "nope"' });
    const limit = await get('/api/instances?limit=0');
    expect(limit.status).toBe(400);
    expect(limit.headers.get('content-type')).toBe('application/problem+json');
  });

  it('without an audit log serves graphs and says there are no instances', async () => {
    const bare = createInspectHandler({ flows: approvals });
    const req = (path: string) =>
      bare.fetch(new Request(`http://127.0.0.1${path}`, { headers: { host: '127.0.0.1' } }));
    expect((await body(await req('/api/flows'))).audit).toBe(false);
    expect(await body(await req('/api/instances'))).toEqual({ audit: false, instances: [] });
  });

  it('serveInspect listens on loopback, checks Host over the socket and refuses other hosts', async () => {
    await expect(serveInspect({ flows: approvals, host: '0.0.0.0' })).rejects.toThrow(/loopback/);
    const serving = await serveInspect({ flows: approvals });
    try {
      expect(serving.url.hostname).toBe('127.0.0.1');
      expect((await fetch(new URL('/api/flows', serving.url))).status).toBe(200);
      const { request } = await import('node:http');
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(new URL('/api/flows', serving.url), { headers: { host: 'rebound.example' } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(403);
    } finally {
      await serving.close();
    }
  });
});

describe('baton inspect (CLI)', () => {
  it('refuses non-loopback hosts and bad arguments with one line', async () => {
    const foreign = await runCli(['inspect', 'examples/approvals', '--http', '0.0.0.0:0']);
    expect(foreign.code).toBe(2);
    expect(foreign.stderr.trim().split('\n')).toHaveLength(1);
    expect(foreign.stderr).toContain('loopback');
    const half = await runCli(['inspect', 'examples/approvals', '--http', '0.0.0.0:0', '--oauth-issuer', 'https://id']);
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('sign-in needs --login-client-id, --login-client-secret-file, --public-url too');
    const missing = await runCli(['inspect']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing <flows-module>');
  });

  it('serves the rounds recorded in a SQLite audit log', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-inspect-'));
    const url = `sqlite:${join(dir, 'audit.db')}`;
    const writer = await openAuditLog(url, { pruneIntervalMs: 0 });
    for (const entry of recordedDeployEntries()) await writer.append(entry);
    // An expense request waiting on a manager, parked in the ledger on the same database.
    const ledger = await openLedger(url, { pruneIntervalMs: 0 });
    const runner = createRunner({
      flows: [expenseApproval],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      ledger,
      audit: writer,
      holdMs: 1,
    });
    const context = { principal: 'alice', method: 'tools/call' as const, target: 'expense_approval' };
    const waiting = await runner.run({ flow: 'expense_approval', args: { amount: 80, purpose: 'books' }, context });
    await ledger.close();
    await writer.close();
    const child = spawn(process.execPath, cliArgs(['inspect', 'examples/approvals', '--audit', url]), {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      let stderr = '';
      const page = await new Promise<URL>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`baton inspect did not start within 60 s:\n${stderr}`)),
          60_000,
        );
        child.stderr!.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          const match = /inspecting 6 flows at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stderr);
          if (match) {
            clearTimeout(timer);
            resolve(new URL(match[1]!));
          }
        });
        child.once('exit', (code) => reject(new Error(`baton inspect exited with ${code}:\n${stderr}`)));
      });
      const list = await body(await fetch(new URL('/api/instances?flow=deploy_production', page)));
      expect(list.instances.map((i: { fid: string }) => i.fid)).toEqual([DEPLOYED_FID, 'fi_deploy_no_Zk31']);
      const one = await body(await fetch(new URL(`/api/instances/${DEPLOYED_FID}`, page)));
      expect(one.rounds[1]).toMatchObject({ before: 'awaitingApproval', after: 'deployed', outcome: 'complete' });
      expect(one.edges).toHaveLength(3);
      const parked = await body(await fetch(new URL(`/api/instances/${waiting.fid}`, page)));
      expect(parked.waiting).toMatchObject({
        source: 'ledger',
        status: 'waiting',
        decisions: [{ key: 'manager_approval', role: 'manager', deadline: expect.any(Number) }],
      });
      expect(parked.waiting.text).toMatch(/^waiting for manager_approval \(role manager, until 20\d\d-.*Z\)$/);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('inspect on a real run', () => {
  it('maps the rounds the runner audits onto the graph', async () => {
    const audit = memoryAuditLog();
    const runner = createRunner({
      flows: [deployProduction],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      audit,
    });
    const context = { principal: 'alice', method: 'tools/call' as const, target: 'deploy_production' };
    const first = await runner.run({ flow: 'deploy_production', args: { version: '1.2.3' }, context });
    if (first.type !== 'input_required') throw new Error(`expected input_required, got ${first.type}`);
    const done = await runner.run({
      flow: 'deploy_production',
      args: { version: '1.2.3' },
      context,
      requestState: first.requestState,
      inputResponses: {
        confirm_deploy: { action: 'accept', content: { confirm: true } },
        change_ticket: { action: 'accept', content: { ticket: 'CHG-9' } },
      },
    });
    expect(done.type).toBe('complete');
    const [instance] = await audit.instances();
    const handler = createInspectHandler({ flows: [deployProduction], audit });
    const res = await handler.fetch(
      new Request(`http://127.0.0.1/api/instances/${instance!.fid}`, { headers: { host: '127.0.0.1' } }),
    );
    const recorded = await body(res);
    const graph = flowGraph(deployProduction);
    const edge = (id: string) => {
      const e = graph.edges.find((x) => x.id === id)!;
      return `${e.source.split('.').pop()}->${e.target.split('.').pop()}`;
    };
    expect(recorded.rounds).toHaveLength(2);
    expect(recorded.edges.map(edge)).toEqual([
      'planning->awaitingApproval',
      'awaitingApproval->confirmed',
      'confirmed->deployed',
    ]);
    expect(recorded.rounds[1].received.map((a: { key: string; action: string }) => `${a.key}:${a.action}`)).toEqual([
      'confirm_deploy:accept',
      'change_ticket:accept',
    ]);
  });
});

describe('inspect: what a flow waits for, and from whom', () => {
  it('says which decision a parked expense waits for, from the audit and from the ledger', async () => {
    const audit = memoryAuditLog();
    const ledger = createMemoryLedger();
    const runner = createRunner({
      flows: [expenseApproval],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      ledger,
      audit,
      holdMs: 1,
      pollMs: 1,
    });
    const context = { principal: 'alice', method: 'tools/call' as const, target: 'expense_approval' };
    const first = await runner.run({ flow: 'expense_approval', args: { amount: 2500, purpose: 'offsite' }, context });
    if (first.type !== 'input_required') throw new Error(`expected input_required, got ${first.type}`);
    const instance = async (options: { withLedger: boolean }) => {
      const handler = createInspectHandler({
        flows: approvals,
        audit,
        ...(options.withLedger ? { requests: ledger } : {}),
      });
      const res = await handler.fetch(
        new Request(`http://127.0.0.1/api/instances/${first.fid}`, { headers: { host: '127.0.0.1' } }),
      );
      return body(res);
    };
    expect((await instance({ withLedger: false })).waiting).toEqual({
      source: 'audit',
      status: 'waiting',
      decisions: [{ key: 'manager_approval', role: 'manager' }],
      text: 'waiting for manager_approval (role manager)',
    });
    expect((await instance({ withLedger: true })).waiting).toMatchObject({
      source: 'ledger',
      decisions: [{ key: 'manager_approval', role: 'manager', deadline: expect.any(Number) }],
    });
    // The manager approves: above 1000, finance is asked next.
    const bob = { principal: 'bob', roles: ['manager'] };
    const asked = await runner.decide({ id: first.fid, context: bob });
    if (asked.type !== 'input_required') throw new Error(`expected input_required, got ${asked.type}`);
    await runner.decide({
      id: first.fid,
      context: bob,
      requestState: asked.requestState,
      inputResponses: { decision: { action: 'accept', content: { approve: true } } },
    });
    expect((await instance({ withLedger: false })).waiting?.text).toBe('waiting for finance_approval (role finance)');
    expect((await instance({ withLedger: true })).waiting?.text).toMatch(
      /^waiting for finance_approval \(role finance, until .*\)$/,
    );
    // Finance rejects: the flow has ended, nobody is waited for.
    const carol = { principal: 'carol', roles: ['finance'] };
    const again = await runner.decide({ id: first.fid, context: carol });
    if (again.type !== 'input_required') throw new Error(`expected input_required, got ${again.type}`);
    await runner.decide({
      id: first.fid,
      context: carol,
      requestState: again.requestState,
      inputResponses: { decision: { action: 'accept', content: { approve: false } } },
    });
    expect((await instance({ withLedger: false })).waiting).toBeUndefined();
    expect((await instance({ withLedger: true })).waiting).toMatchObject({
      status: 'completed',
      text: 'request completed: nothing left to decide',
    });
    await ledger.close();
  });
});

describe('inspect: instances recorded in SQLite by the real runner', () => {
  it('serves who started each run, its arguments when allowed, its status, times and decisions', async () => {
    const scenario = await recordInspectScenario();
    try {
      const handler = createInspectHandler({ flows: approvals, audit: scenario.audit, requests: scenario.ledger });
      const instance = async (fid: string) =>
        body(
          await handler.fetch(new Request(`http://127.0.0.1/api/instances/${fid}`, { headers: { host: '127.0.0.1' } })),
        );
      const { fids } = scenario;

      const deployed = await instance(fids.deployed);
      expect(deployed.details).toMatchObject({
        startedBy: { name: null, hash: expect.stringMatching(/^[A-Za-z0-9_-]{20,}$/) },
        args: { shown: false, reason: 'hidden: the flow does not record values (auditValues)' },
        status: { state: 'finished', finalState: 'deployed', text: 'finished in deployed' },
        times: { expires: null },
        decisions: [],
      });
      // Round 3 used the confirmation held since round 2: both its answers, each with its transition.
      const graph = flowGraph(deployProduction);
      const target = (id: string) =>
        graph.edges
          .find((e) => e.id === id)!
          .target.split('.')
          .pop();
      const answers = deployed.rounds.map((r: any) =>
        r.answers.map(
          (a: any) =>
            `${a.text}${a.held ? ' (held)' : ''}${a.transitions.map((t: string) => ` → ${target(t)}`).join('')}`,
        ),
      );
      expect(answers).toEqual([
        [],
        ['confirm_deploy:accept', 'change_ticket:invalid'],
        ['change_ticket:accept → deployed', 'confirm_deploy:accept (held) → confirmed'],
      ]);
      expect(deployed.rounds[1].answers.some((a: object) => 'value' in a)).toBe(false);

      const abandoned = await instance(fids.abandoned);
      expect(abandoned.details.status.state).toBe('abandoned');
      expect(abandoned.details.times.expires).toBeLessThan(Date.now());
      expect(abandoned.rounds[0].expiresAt).toBe(abandoned.details.times.expires);

      const rejected = await instance(fids.expenseRejected);
      expect(rejected.details).toMatchObject({
        startedBy: { name: 'alice@example.com' },
        args: { shown: true, value: { amount: 400, purpose: 'new chair' } },
        status: { state: 'finished', finalState: 'rejectedByManager' },
        decisions: [
          {
            key: 'manager_approval',
            status: 'decided',
            decider: 'bob@example.com',
            decidedAt: expect.any(Number),
            answer: 'manager_approval:accept',
            value: { action: 'accept', content: { approve: false, comment: 'not this quarter' } },
            round: 2,
          },
        ],
      });

      const waiting = await instance(fids.expenseWaiting);
      expect(waiting.details.status).toEqual({
        state: 'waiting',
        text: expect.stringMatching(/^waiting for finance_approval \(role finance, until 20\d\d-.*Z\)$/),
      });
      expect(waiting.details.times.expires).toBe(
        waiting.details.decisions.find((d: { key: string }) => d.key === 'finance_approval').deadline,
      );

      // A sensitive argument is recorded redacted even though the flow records values.
      const redeemed = await instance(fids.redeemed);
      expect(redeemed.details.args).toEqual({ shown: true, value: { code: '[redacted]' } });
      expect(JSON.stringify(await scenario.audit.rounds(fids.redeemed))).not.toContain('SECRET-CODE-42');
    } finally {
      await scenario.close();
    }
  });

  it('describeInstance: a decision made for someone (decided by Y for X) and one handed over', () => {
    const round: AuditEntry = {
      fid: 'f1',
      flow: 'expense_approval',
      hash: expenseApproval.hash,
      round: 2,
      at: 2000,
      ms: 1,
      principal: 'ZGF2ZQ',
      via: 'decide_api',
      before: 'awaitingManager',
      after: 'awaitingFinance',
      path: [],
      asked: [],
      received: [{ key: 'manager_approval', action: 'accept', decider: 'ZGF2ZQ', onBehalfOf: 'Ym9i' }],
      outcome: 'input_required',
    };
    const record = {
      id: 'f1',
      flow: 'expense_approval',
      message: 'm',
      schema: '{}',
      requester: 'aGFzaA',
      requestedAt: 0,
      deadline: null,
      content: null,
    };
    const details = describeInstance({
      flow: expenseApproval,
      rounds: [round],
      now: 3000,
      decisions: [
        {
          ...record,
          key: 'manager_approval',
          role: 'manager',
          status: 'decided',
          decider: 'h-dave',
          deciderName: null,
          decidedAt: 2000,
          onBehalfOf: 'h-bob',
          onBehalfOfName: null,
        },
        {
          ...record,
          key: 'finance_approval',
          role: 'finance',
          status: 'pending',
          decider: null,
          deciderName: null,
          decidedAt: null,
          assignee: 'h-gina',
          handover: {
            to: 'h-gina',
            toName: 'gina',
            by: 'h-carol',
            byName: 'carol',
            onBehalfOf: 'h-carol',
            onBehalfOfName: 'carol',
            authority: 'sealed',
            reason: 'on leave',
            at: 2500,
          },
        },
      ],
    });
    // The audited keyed hash of bob, like the decider's; names where the ledger stores them.
    expect(details.decisions[0]).toMatchObject({ deciderHash: 'ZGF2ZQ', onBehalfOf: 'Ym9i' });
    expect(details.decisions[1]).toMatchObject({ status: 'pending', handedOver: 'handed by carol to gina (on leave)' });
  });

  it('describeInstance: expired, withdrawn and failed runs; waiting on the caller until its state expires', () => {
    const base: AuditEntry = {
      fid: 'f1',
      flow: 'deploy_production',
      hash: deployProduction.hash,
      round: 1,
      at: 1000,
      ms: 1,
      principal: 'aGFzaA',
      via: 'call',
      before: null,
      after: 'awaitingApproval',
      path: ['awaitingApproval'],
      asked: ['confirm_deploy'],
      received: [],
      outcome: 'input_required',
      expiresAt: 5000,
    };
    const describe1 = (rounds: AuditEntry[], now: number, extra: object = {}) =>
      describeInstance({ flow: deployProduction, rounds, now, ...extra }).status;
    expect(describe1([base], 4000)).toEqual({
      state: 'waiting',
      text: 'waiting for principal aGFzaA to answer confirm_deploy (until 1970-01-01T00:00:05.000Z)',
    });
    expect(describe1([base], 5000).state).toBe('abandoned');
    expect(describe1([{ ...base, outcome: 'error', message: 'boom' }], 0)).toEqual({
      state: 'failed',
      text: 'failed in round 1: boom',
    });
    const row = {
      id: 'f1',
      flow: 'expense_approval',
      requester: 'aGFzaA',
      requesterName: 'alice',
      waitingFor: [],
      state: '',
      version: 2,
      createdAt: 0,
      updatedAt: 0,
      expiresAt: 0,
    };
    expect(describe1([base], 0, { request: { ...row, status: 'expired' } }).state).toBe('expired');
    expect(
      describe1([{ ...base, outcome: 'complete', after: 'withdrawn' }], 0, {
        request: { ...row, status: 'withdrawn' },
      }),
    ).toEqual({ state: 'withdrawn', finalState: 'withdrawn', text: 'withdrawn by its requester (ended in withdrawn)' });
    expect(
      describeInstance({ flow: deployProduction, rounds: [base], now: 0, request: { ...row, status: 'waiting' } })
        .startedBy,
    ).toEqual({
      hash: 'aGFzaA',
      name: 'alice',
    });
  });
  it("describeInstance: a call that completed with 'waiting' leaves it waiting; another call's round ends it", () => {
    const row: ParkedRequest = {
      status: 'waiting',
      id: 'f2',
      flow: 'expense_approval',
      requester: 'aGFzaA',
      requesterName: null,
      waitingFor: [{ key: 'manager_approval', role: 'manager' }],
      state: '',
      version: 2,
      createdAt: 0,
      updatedAt: 0,
      expiresAt: 0,
    };
    const entry = (round: number, extra: Partial<AuditEntry>): AuditEntry => ({
      fid: 'f2',
      flow: 'expense_approval',
      hash: expenseApproval.hash,
      round,
      at: round * 1000,
      ms: 1,
      principal: 'aGFzaA',
      via: 'call',
      before: { deciding: 'manager' },
      after: { deciding: 'manager' },
      path: [{ deciding: 'manager' }],
      asked: [],
      received: [],
      outcome: 'complete',
      ...extra,
    });
    // The requester's call ran out of wait: its round completed, the request is still parked.
    const waited = [entry(1, { before: null })];
    const status = (rounds: AuditEntry[], request?: ParkedRequest) =>
      describeInstance({ flow: expenseApproval, rounds, now: 0, ...(request ? { request } : {}) }).status;
    expect(status(waited, { ...row, status: 'waiting' }).state).toBe('waiting');
    expect(status(waited).state).toBe('waiting'); // from the audit alone: manager awaits a decision
    // A decider's round ended it; the requester's resume found it ended (after: null).
    const ended = [
      ...waited,
      entry(2, { via: 'decide', principal: 'Ym9i', path: [{ deciding: 'manager' }, 'approved'], after: 'approved' }),
      entry(3, { via: 'resume', before: null, after: null, path: [] }),
    ];
    expect(status(ended, { ...row, status: 'completed', waitingFor: [] })).toEqual({
      state: 'finished',
      finalState: 'approved',
      text: 'finished in approved',
    });
  });

  it('describeInstance names deciders like requesters: the stored name, else the audited keyed hash', () => {
    const started: AuditEntry = {
      fid: 'f2',
      flow: 'expense_approval',
      hash: expenseApproval.hash,
      round: 1,
      at: 1000,
      ms: 1,
      principal: 'YWxpY2UtaGFzaA',
      via: 'call',
      before: null,
      after: 'awaitingManager',
      path: ['awaitingManager'],
      asked: [],
      received: [],
      outcome: 'input_required',
    };
    const delivered: AuditEntry = {
      ...started,
      round: 2,
      at: 2000,
      principal: 'Ym9iLWF1ZGl0LWhhc2g',
      before: 'awaitingManager',
      after: 'approved',
      path: ['approved'],
      received: [{ key: 'manager_approval', action: 'accept', decider: 'Ym9iLWF1ZGl0LWhhc2g' }],
      outcome: 'complete',
    };
    const record = {
      id: 'f2',
      key: 'manager_approval',
      flow: 'expense_approval',
      role: 'manager',
      message: 'Approve?',
      schema: '{}',
      requester: 'bGVkZ2VyLWhhc2g',
      requestedAt: 1000,
      deadline: null,
      status: 'decided' as const,
      // The ledger's decider is a keyed hash (of another purpose than the audit trail's): never shown.
      decider: 'Ym9iLWxlZGdlci1oYXNo',
      content: 'sealed',
      decidedAt: 1500,
    };
    const view = (deciderName: string | null) =>
      describeInstance({
        flow: expenseApproval,
        rounds: [started, delivered],
        now: 3000,
        decisions: [{ ...record, deciderName }],
      }).decisions[0];
    expect(view(null)).toMatchObject({ decider: null, deciderHash: 'Ym9iLWF1ZGl0LWhhc2g', round: 2 });
    expect(view('bob')).toMatchObject({ decider: 'bob', deciderHash: 'Ym9iLWF1ZGl0LWhhc2g' });
    expect(describeInstance({ flow: expenseApproval, rounds: [started], now: 3000 }).startedBy).toEqual({
      hash: 'YWxpY2UtaGFzaA',
      name: null,
    });
  });
});

describe('inspect: live events', () => {
  it('streams a change when a round is recorded, and bye when the server closes', async () => {
    const audit = memoryAuditLog(recordedDeployEntries());
    const serving = await serveInspect({ flows: approvals, audit, pollMs: 50 });
    const response = await fetch(new URL('/api/events', serving.url));
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(received)) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}: ${received}`);
        received += value;
      }
    };
    await until(/event: ready/);
    await audit.append({ ...recordedDeployEntries()[0]!, fid: 'fi_new_round', at: Date.now() });
    await until(/event: change\ndata: \{"instances":\["fi_new_round"\]\}/);
    // HEAD answers at once, with the stream's headers and no stream.
    const head = await fetch(new URL('/api/events', serving.url), { method: 'HEAD' });
    expect([head.status, head.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
    const closing = serving.close();
    await until(/event: bye/);
    expect((await reader.read()).done).toBe(true);
    await closing;
  });

  it('answers 404 on /api/events without an audit log', async () => {
    const handler = createInspectHandler({ flows: approvals });
    const res = await handler.fetch(new Request('http://127.0.0.1/api/events', { headers: { host: '127.0.0.1' } }));
    expect(res.status).toBe(404);
  });
});
