/**
 * Operator actions in `baton inspect`, over real HTTP on loopback against a
 * real SQLite ledger and audit trail, through the runner's operator tools
 * (what `baton runs` calls): on loopback the local operator terminates a
 * waiting run with the page's token (the ledger says `terminated`, the audit
 * trail has the round `via: 'operator'` with who and why) and a second try is
 * refused with the engine's sentence; a POST without the token, from a
 * foreign Origin, without a reason, or a GET are refused and change nothing.
 * Beyond loopback (bound to 0.0.0.0) behind the real oidc-provider: nothing
 * answers without a session, a signed-in person with the `operator` role
 * cancels a run (the flow's withdrawal), one without it gets 403.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWebLogin, type InspectServing, serveInspect } from '@baton/adapters';
import {
  type AuditEntry,
  createRequestStateCodec,
  createRunner,
  generateKey,
  parseKeyRingEnv,
  type Runner,
} from '@baton/engine';
import { openAuditLog, openLedger } from '@baton/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import approvals from '../examples/approvals/index.js';

import { startIdentityProvider, type TestIdentityProvider } from './helpers/oidcProvider.js';

type Opened = Awaited<ReturnType<typeof openAuditLog>>;
type OpenedLedger = Awaited<ReturnType<typeof openLedger>>;

/** A real SQLite ledger and audit trail, a runner on them, and expenses waiting on a manager. */
async function setUp() {
  const dir = await mkdtemp(join(tmpdir(), 'baton-inspect-ops-'));
  const url = `sqlite:${join(dir, 'baton.db')}`;
  const audit: Opened = await openAuditLog(url, { pruneIntervalMs: 0 });
  const ledger: OpenedLedger = await openLedger(url, { pruneIntervalMs: 0 });
  const runner: Runner = createRunner({
    flows: approvals,
    codec: createRequestStateCodec({ keys: [generateKey()] }),
    ledger,
    audit,
    holdMs: 1,
    storePrincipalNames: true,
  });
  const expense = async () => {
    const context = { principal: 'alice', method: 'tools/call' as const, target: 'expense_approval' };
    return (await runner.run({ flow: 'expense_approval', args: { amount: 90, purpose: 'books' }, context })).fid;
  };
  return {
    audit,
    ledger,
    runner,
    expense,
    async close() {
      await ledger.close();
      await audit.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const operatorRounds = async (audit: Opened, fid: string): Promise<AuditEntry[]> =>
  (await audit.rounds(fid)).filter((entry) => entry.via === 'operator');

describe('inspect operator actions on loopback', () => {
  let setup: Awaited<ReturnType<typeof setUp>>;
  let serving: InspectServing;
  let origin: string;
  let csrf: string;

  beforeAll(async () => {
    setup = await setUp();
    serving = await serveInspect({
      flows: approvals,
      audit: setup.audit,
      requests: setup.ledger,
      operators: setup.runner.operators,
      localOperator: 'oncall',
    });
    origin = serving.url.origin;
    const session = (await (await fetch(new URL('/api/session', serving.url))).json()) as Record<string, unknown>;
    expect(session).toMatchObject({ viewer: 'oncall', signedIn: false, canAct: true });
    csrf = session.csrf as string;
  });

  afterAll(async () => {
    await serving?.close();
    await setup?.close();
  });

  const post = (fid: string, action: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(new URL(`/api/instances/${fid}/${action}`, serving.url), {
      method: 'POST',
      headers: { origin, 'x-baton-csrf': csrf, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  it('terminates a waiting run as the local operator: the ledger and the audit trail say who and why', async () => {
    const fid = await setup.expense();
    const done = await post(fid, 'terminate', { reason: 'stuck since the migration' });
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ action: 'terminate', status: 'terminated', id: fid });
    expect((await setup.ledger.requests.getRequest(fid))?.status).toBe('terminated');
    const [entry] = await operatorRounds(setup.audit, fid);
    expect(entry).toMatchObject({ via: 'operator', principalName: 'oncall', message: 'stuck since the migration' });

    const again = await post(fid, 'terminate', { reason: 'twice' });
    expect(again.status).toBe(409);
    expect(again.headers.get('content-type')).toBe('application/problem+json');
    expect(await again.json()).toMatchObject({ reason: 'refused', detail: expect.stringMatching(/^Not terminated/) });
    expect(await operatorRounds(setup.audit, fid)).toHaveLength(1);
  });

  it('refuses a POST without the token, from a foreign Origin, without a reason, and never acts on GET', async () => {
    const fid = await setup.expense();
    const refusals = [
      await post(fid, 'terminate', { reason: 'r' }, { 'x-baton-csrf': 'forged' }),
      await fetch(new URL(`/api/instances/${fid}/terminate`, serving.url), {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json' },
        body: '{"reason":"r"}',
      }),
      await post(fid, 'terminate', { reason: 'r' }, { origin: 'http://evil.example' }),
      await post(fid, 'terminate', { reason: '  ' }),
      await post(fid, 'retry-step', { reason: 'r', step: 'charge' }),
      await fetch(new URL(`/api/instances/${fid}/terminate?reason=r`, serving.url)),
    ];
    expect(refusals.map((r) => r.status)).toEqual([403, 403, 403, 400, 409, 405]);
    for (const refused of refusals) {
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
    }
    expect(refusals[5]!.headers.get('allow')).toBe('POST');
    expect(((await refusals[4]!.json()) as { detail: string }).detail).toMatch(/does not wait on a durable step/);
    expect((await setup.ledger.requests.getRequest(fid))?.status).toBe('waiting');
    expect(await operatorRounds(setup.audit, fid)).toEqual([]);
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Cookies of one browser, as `fetch` sends them. */
class Jar {
  readonly #cookies = new Map<string, string>();
  take(response: Response): Response {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const [name, value] = [pair!.slice(0, at), pair!.slice(at + 1)];
      if (/Max-Age=0/.test(line)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
    return response;
  }
  get header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

describe('inspect operator actions beyond loopback, behind sign-in', () => {
  const WEB = { clientId: 'baton-inspect', clientSecret: 'baton-inspect-secret-0123456789' };
  let setup: Awaited<ReturnType<typeof setUp>>;
  let idp: TestIdentityProvider;
  let serving: InspectServing;
  let base: URL;

  beforeAll(async () => {
    setup = await setUp();
    const port = await freePort();
    base = new URL(`http://127.0.0.1:${port}/`);
    idp = await startIdentityProvider(
      [],
      [
        { accountId: 'olga', groups: ['operator'], name: 'Olga Operator' },
        { accountId: 'vic', groups: ['viewer'], name: 'Vic Viewer' },
      ],
      [{ ...WEB, redirectUris: [new URL('/auth/callback', base).href] }],
    );
    const metadata = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as {
      issuer: string;
    };
    serving = await serveInspect({
      flows: approvals,
      audit: setup.audit,
      requests: setup.ledger,
      operators: setup.runner.operators,
      // Beyond loopback: every interface; answered only at the public URL's host.
      host: '0.0.0.0',
      port,
      signIn: {
        login: createWebLogin({
          metadata,
          ...WEB,
          redirectUri: new URL('/auth/callback', base),
          mapping: { issuer: metadata.issuer, rolesClaim: 'groups' },
        }),
        keys: parseKeyRingEnv(generateKey()),
        publicUrl: base,
      },
    });
  }, 30_000);

  afterAll(async () => {
    await serving?.close();
    await idp?.close();
    await setup?.close();
  });

  /** Sign in as `accountId` the way a browser does: the page, the provider, the callback. */
  const signIn = async (accountId: string) => {
    const jar = new Jar();
    const page = jar.take(await fetch(base, { redirect: 'manual' }));
    expect(page.status).toBe(303);
    const callback = await idp.signIn(page.headers.get('location')!, accountId);
    const back = jar.take(await fetch(callback, { redirect: 'manual', headers: { cookie: jar.header } }));
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe('/');
    const session = (await (
      await fetch(new URL('/api/session', base), { headers: { cookie: jar.header } })
    ).json()) as {
      csrf: string;
      canAct: boolean;
      viewer: string;
    };
    const act = (fid: string, action: string, reason: string) =>
      fetch(new URL(`/api/instances/${fid}/${action}`, base), {
        method: 'POST',
        headers: {
          cookie: jar.header,
          origin: base.origin,
          'x-baton-csrf': session.csrf,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ reason }),
      });
    return { jar, session, act };
  };

  it('answers nothing without a session and only at the public host', async () => {
    const api = await fetch(new URL('/api/flows', base));
    expect(api.status).toBe(401);
    expect(api.headers.get('content-type')).toBe('application/problem+json');
    const page = await fetch(base, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toMatch(new RegExp(`^${idp.issuer}/`));
    const foreign = await fetch(new URL('/api/flows', `http://localhost:${base.port}`));
    expect(foreign.status).toBe(403);
  });

  it('lets a signed-in operator cancel a run; someone without the operator role gets 403', async () => {
    const fid = await setup.expense();
    const vic = await signIn('vic');
    expect(vic.session).toMatchObject({ viewer: 'Vic Viewer', canAct: false });
    const refused = await vic.act(fid, 'cancel', 'not mine to cancel');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused.json()).toMatchObject({ reason: 'not_operator' });
    expect((await setup.ledger.requests.getRequest(fid))?.status).toBe('waiting');

    const olga = await signIn('olga');
    expect(olga.session).toMatchObject({ viewer: 'Olga Operator', canAct: true });
    const done = await olga.act(fid, 'cancel', 'duplicate of another expense');
    expect(done.status).toBe(200);
    expect((await setup.ledger.requests.getRequest(fid))?.status).toBe('withdrawn');
    const [entry] = await operatorRounds(setup.audit, fid);
    expect(entry).toMatchObject({ via: 'operator', principalName: `${idp.issuer}#olga` });
  });
});
