/**
 * `baton serve --oauth-issuer` against a real authorization server on
 * loopback (oidc-provider, `helpers/oidcProvider.ts`): one provider for the
 * file, one `baton serve` process serving `examples/approvals` on a SQLite
 * ledger with roles from the `groups` claim mapped by `--group-roles`, and one
 * in-process server (the adapter options) for what needs short JWKS timings:
 * key rotation and a JWKS outage.
 *
 * Covered: the official MCP client finds the Protected Resource Metadata from
 * the 401, gets a client-credentials token for the resource and runs a flow;
 * two provider accounts run `expense_approval` with four eyes on their `sub`
 * (same role, the requester cannot decide); a token without `baton:decide`
 * gets 403 `insufficient_scope`; forged tokens (another issuer, another
 * audience, expired, unknown kid, `alg: none`, HS256 keyed with the public
 * key, malformed, oversized) get 401 with the challenge, the log says why and
 * never holds the token; an unreachable issuer at start-up is one line and
 * exit 1; `--oauth-issuer` with `--auth-tokens` is refused; `baton call --oauth` with client
 * credentials and its token cache; opaque tokens by introspection, cached.
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createFlowServerFactory,
  createOAuthVerifier,
  discoverOAuthIssuer,
  type HttpServing,
  type OAuthVerifier,
  serveHttp,
} from '@baton/adapters';
import { createKeyRing, createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import approvals from '../examples/approvals/index.js';
import { authInfoOf, rolesOf, scopesOf } from '../packages/adapters/src/auth/oauthClaims.js';
import {
  cliArgs,
  connectHttp,
  ROOT,
  runCli,
  type ServeProcess,
  sleep,
  startServe,
  textOf,
} from './helpers/mcpClients.js';
import {
  CLI_CLIENT_ID,
  newSigningKey,
  signJwt,
  startIdentityProvider,
  type TestClient,
  type TestIdentityProvider,
  type TestUser,
} from './helpers/oidcProvider.js';

const alice: TestClient = {
  clientId: 'alice',
  clientSecret: 'alice-secret-0123456789',
  groups: ['managers'],
  name: 'Alice',
};
const bob: TestClient = { clientId: 'bob', clientSecret: 'bob-secret-0123456789', groups: ['managers', 'staff'] };
/** A manager whose client may only ask for `baton:call`. */
const carol: TestClient = {
  clientId: 'carol',
  clientSecret: 'carol-secret-0123456789',
  groups: ['managers'],
  scope: 'baton:call',
};
/** Two people who sign in through the browser (authorization code), both managers. */
const dave: TestUser = { accountId: 'dave', groups: ['managers'], name: 'Dave' };
const erin: TestUser = { accountId: 'erin', groups: ['managers'], name: 'Erin' };
/** This server's own client at the provider, for introspection. */
const introspector: TestClient = { clientId: 'baton-rs', clientSecret: 'baton-rs-secret-0123456789' };

let idp: TestIdentityProvider;
let serve: ServeProcess;
let dir: string;
const BATON_KEYS = generateKey();

beforeAll(async () => {
  idp = await startIdentityProvider([alice, bob, carol, introspector], [dave, erin]);
  dir = mkdtempSync(join(tmpdir(), 'baton-oauth-'));
  writeFileSync(join(dir, 'groups.json'), JSON.stringify({ managers: 'manager', 'finance-team': ['finance'] }));
  serve = await startServe(
    [
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--ledger',
      `sqlite:${join(dir, 'ledger.db')}`,
      '--wait-in-call',
      '0',
      '--oauth-issuer',
      idp.issuer,
      '--roles-claim',
      'groups',
      '--group-roles',
      join(dir, 'groups.json'),
    ],
    { BATON_KEYS },
  );
}, 90_000);

afterAll(async () => {
  await serve?.stop();
  await idp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A raw POST of `tools/list` with this Authorization header value (or none). */
async function post(url: URL, authorization?: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(authorization ? { authorization } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
}

const metadataUrl = (url: URL) => `${url.origin}/.well-known/oauth-protected-resource/mcp`;

describe('baton serve --oauth-issuer (a real provider on loopback)', () => {
  it('publishes Protected Resource Metadata and challenges a request without a token', async () => {
    const refused = await post(serve.url);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl(serve.url)}"`);
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const document = await (await fetch(new URL(path, serve.url))).json();
      expect(document).toMatchObject({
        resource: serve.url.href,
        authorization_servers: [idp.issuer],
        scopes_supported: ['baton:call', 'baton:decide', 'baton:events'],
      });
    }
  });

  it('the official MCP client discovers the provider from the 401, gets a token and runs a flow', async () => {
    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    const provider = new ClientCredentialsProvider({
      clientId: bob.clientId,
      clientSecret: bob.clientSecret,
      scope: 'baton:call baton:decide',
      expectedIssuer: idp.issuer,
    });
    await client.connect(new StreamableHTTPClientTransport(serve.url, { authProvider: provider }));
    try {
      const result = await client.callTool({ name: 'expense_approval', arguments: { amount: 10, purpose: 'pens' } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ status: 'waiting' });
      expect(provider.tokens()?.access_token).toBeTypeOf('string');
    } finally {
      await client.close();
    }
  });

  async function as(who: TestClient, scope?: string) {
    const token = await idp.token(who, { resource: serve.url.href, ...(scope ? { scope } : {}) });
    const connected = await connectHttp(serve.url, {
      token,
      elicit: () => ({ action: 'accept', content: { approve: true } }),
    });
    return connected.client;
  }

  it('four eyes on the provider sub: alice (manager) requests, cannot decide herself, bob (manager) does', async () => {
    const aliceClient = await as(alice);
    const requested = await aliceClient.callTool({
      name: 'expense_approval',
      arguments: { amount: 250, purpose: 'conference' },
    });
    const { id } = requested.structuredContent as { id: string; status: string };
    expect(requested.structuredContent).toMatchObject({ status: 'waiting' });

    const aliceInbox = await aliceClient.callTool({ name: 'baton_inbox', arguments: {} });
    expect((aliceInbox.structuredContent as { decisions: { id: string }[] }).decisions.map((d) => d.id)).not.toContain(
      id,
    );
    const own = await aliceClient.callTool({ name: 'baton_decide', arguments: { id } });
    expect(own.isError).toBe(true);

    const bobClient = await as(bob);
    const bobInbox = await bobClient.callTool({ name: 'baton_inbox', arguments: {} });
    expect((bobInbox.structuredContent as { decisions: { id: string }[] }).decisions.map((d) => d.id)).toContain(id);
    const decided = await bobClient.callTool({ name: 'baton_decide', arguments: { id } });
    expect(textOf(decided)).toMatch(/^Recorded/);

    const done = await aliceClient.callTool({ name: 'baton_resume', arguments: { id } });
    expect(textOf(done)).toContain('approved');
    await Promise.all([aliceClient.close(), bobClient.close()]);
  });

  it('a token without baton:decide gets 403 insufficient_scope on baton_decide, and may still call flows', async () => {
    const token = await idp.token(carol, { resource: serve.url.href });
    const call = (name: string, args: Record<string, unknown>) =>
      fetch(serve.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
      });
    const refused = await call('baton_inbox', {});
    expect(refused.status).toBe(403);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="baton:decide"');
    expect(challenge).toContain(`resource_metadata="${metadataUrl(serve.url)}"`);
    const client = await as(carol);
    const listed = await client.listTools();
    expect(listed.tools.map((tool) => tool.name)).toContain('expense_approval');
    await client.close();
  });

  it('refuses forged, foreign, expired and malformed tokens with 401 and the challenge, and logs why without the token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: 'mallory', iat: now, exp: now + 300, scope: 'baton:call baton:decide', groups: ['managers'] };
    const audience = serve.url.href;
    const publicKey = idp.publicKeys()[0]!;
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const hs256Input = `${part({ alg: 'HS256', typ: 'at+jwt', kid: publicKey.kid })}.${part({ ...claims, iss: idp.issuer, aud: audience })}`;
    const hs256 = `${hs256Input}.${createHmac('sha256', JSON.stringify(publicKey)).update(hs256Input).digest('base64url')}`;
    const cases: [string, string, RegExp][] = [
      ['another issuer', idp.sign({ ...claims, iss: 'http://127.0.0.1:1', aud: audience }), /another issuer/],
      ['another audience', await idp.token(bob, { resource: 'http://127.0.0.1:2/mcp' }), /another audience/],
      ['expired', idp.sign({ ...claims, iss: idp.issuer, aud: audience, exp: now - 120 }), /expired/],
      [
        'unknown kid',
        signJwt(await newSigningKey(), { ...claims, iss: idp.issuer, aud: audience }),
        /signing key \(kid\) is not in/,
      ],
      [
        'alg none',
        `${part({ alg: 'none', typ: 'JWT' })}.${part({ ...claims, iss: idp.issuer, aud: audience })}.`,
        /algorithm that is not allowed|malformed|unsupported/,
      ],
      ['HS256 keyed with the public key', hs256, /algorithm that is not allowed/],
      ['malformed', 'bm90LWpzb24.e30.c2ln', /malformed/],
      [
        'forged signature',
        `${idp.sign({ ...claims, iss: idp.issuer, aud: audience }).slice(0, -4)}AAAA`,
        /signature does not verify/,
      ],
      ['opaque without introspection', 'opaque-token-0123456789', /not a JWT/],
      ['oversized', `${'a'.repeat(13_000)}.b.c`, /longer than/],
    ];
    for (const [what, token, reason] of cases) {
      const before = serve.stderr().length;
      const response = await post(serve.url, `Bearer ${token}`);
      expect(response.status, what).toBe(401);
      const challenge = response.headers.get('www-authenticate') ?? '';
      expect(challenge, what).toContain('error="invalid_token"');
      expect(challenge, what).toContain(`resource_metadata="${metadataUrl(serve.url)}"`);
      // The line is written before the answer, but reaches this process through a pipe: wait for it.
      for (let waited = 0; waited < 5000 && !reason.test(serve.stderr().slice(before)); waited += 20) await sleep(20);
      const logged = serve.stderr().slice(before);
      expect(logged, what).toMatch(reason);
      expect(logged, what).not.toContain(token.slice(0, 40));
    }
  });

  it('baton call --oauth with client credentials discovers the provider, signs in and caches the token (0600)', async () => {
    const secretFile = join(dir, 'bob.secret');
    writeFileSync(secretFile, `${bob.clientSecret}\n`);
    const config = join(dir, 'config');
    const argv = [
      'call',
      'expense_approval',
      '--args',
      '{"amount":20,"purpose":"books"}',
      '--http',
      serve.url.href,
      '--oauth',
      '--client-id',
      bob.clientId,
      '--client-secret-file',
      secretFile,
    ];
    const first = await runCli(argv, { XDG_CONFIG_HOME: config });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/waiting for manager_approval/);
    expect(first.stdout).toContain('--oauth --client-id bob --client-secret-file');
    expect(statSync(join(config, 'baton')).mode & 0o777).toBe(0o700);
    const cacheFile = join(config, 'baton', 'oauth.json');
    expect(statSync(cacheFile).mode & 0o777).toBe(0o600);
    const cached = JSON.parse(readFileSync(cacheFile, 'utf8'));
    const [entry] = Object.values(cached) as { tokens: { access_token: string } }[];
    expect(entry!.tokens.access_token).toBeTypeOf('string');
    expect(first.stderr).not.toContain(entry!.tokens.access_token);
    // The cached token is used again (same token in the cache afterwards).
    const second = await runCli(argv, { XDG_CONFIG_HOME: config });
    expect(second.code, second.stderr).toBe(0);
    const again = Object.values(JSON.parse(readFileSync(cacheFile, 'utf8')))[0] as { tokens: { access_token: string } };
    expect(again.tokens.access_token).toBe(entry!.tokens.access_token);
  });

  /**
   * `baton call --oauth --client-id baton-cli` as `user`: the sign-in URL it prints is opened by the
   * test, which signs in at the provider's login page and consents; resolves when the call exits.
   */
  async function callSignedIn(user: TestUser, tool: string, args: object, config: string) {
    const child = spawn(
      process.execPath,
      cliArgs([
        'call',
        tool,
        '--args',
        JSON.stringify(args),
        '--http',
        serve.url.href,
        '--oauth',
        '--client-id',
        CLI_CLIENT_ID,
      ]),
      {
        cwd: ROOT,
        env: { ...process.env, XDG_CONFIG_HOME: config, BROWSER: 'true' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    let signedIn: Promise<string> | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const url = /Sign in to continue: open (\S+)/.exec(stderr)?.[1];
      if (url && !signedIn) signedIn = idp.signIn(url, user.accountId);
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (signedIn) await signedIn;
    return { code, stdout, stderr, signedIn: signedIn !== undefined };
  }

  it('two provider users sign in with authorization code + PKCE in baton call; four eyes holds on their sub', async () => {
    const daveConfig = join(dir, 'dave-config');
    const requested = await callSignedIn(dave, 'expense_approval', { amount: 75, purpose: 'taxi' }, daveConfig);
    expect(requested.code, requested.stderr).toBe(0);
    expect(requested.signedIn).toBe(true);
    // The authorization server of the sign-in is kept for the callback leg (SEP-2352): the SDK
    // checks it and has nothing to warn about.
    expect(requested.stderr).not.toContain('saveDiscoveryState');
    const id = /on request (\S+);/.exec(requested.stdout)?.[1];
    expect(id, requested.stdout).toBeDefined();
    // Dave's token is cached: no sign-in the second time; he may not decide his own request.
    const own = await callSignedIn(dave, 'baton_decide', { id }, daveConfig);
    expect(own.signedIn).toBe(false);
    expect(own.code).toBe(1);
    expect(own.stdout).toMatch(/four eyes/);
    // Erin, another account with the same group, finds it in her inbox.
    const inbox = await callSignedIn(erin, 'baton_inbox', {}, join(dir, 'erin-config'));
    expect(inbox.code, inbox.stderr).toBe(0);
    expect(inbox.signedIn).toBe(true);
    expect(inbox.stdout).toContain(id);
  });

  it('an unreachable issuer at start-up is one line and exit 1; --auth-tokens with --oauth-issuer is refused', async () => {
    const down = await runCli([
      'serve',
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--oauth-issuer',
      'http://127.0.0.1:1',
    ]);
    expect(down.code).toBe(1);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toMatch(/cannot discover the OAuth issuer http:\/\/127\.0\.0\.1:1/);
    const both = await runCli([
      'serve',
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--oauth-issuer',
      idp.issuer,
      '--auth-tokens',
      join(dir, 'groups.json'),
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --oauth-issuer or --auth-tokens, not both');
  });
});

describe('baton serve --oauth-audience and discovery as providers serve it (issue 35, items 3 and 4)', () => {
  it('--oauth-audience https://api.example is compared and advertised exactly: no trailing slash is added', async () => {
    const audience = 'https://api.example';
    const exact = await startServe(
      [
        'examples/approvals',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        `sqlite:${join(dir, 'audience.db')}`,
        '--oauth-issuer',
        idp.issuer,
        '--oauth-audience',
        audience,
      ],
      { BATON_KEYS },
    );
    try {
      const token = await idp.token(bob, { resource: audience });
      expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).aud).toBe(audience);
      const accepted = await post(exact.url, `Bearer ${token}`);
      expect(accepted.status, exact.stderr()).toBe(200);
      expect(exact.stderr()).not.toContain('another audience');
      // A token for the slashed form is another audience.
      const slashed = await post(exact.url, `Bearer ${await idp.token(bob, { resource: `${audience}/` })}`);
      expect(slashed.status).toBe(401);
      const document = await (await fetch(new URL('/.well-known/oauth-protected-resource', exact.url))).json();
      expect(document).toMatchObject({ resource: audience, authorization_servers: [idp.issuer] });
      const challenge = (await post(exact.url)).headers.get('www-authenticate') ?? '';
      expect(challenge).toContain(`resource_metadata="${audience}/.well-known/oauth-protected-resource"`);
    } finally {
      await exact.stop();
    }
  });

  it('an issuer that serves only its OpenID Connect document: --introspection-client starts and checks opaque tokens', async () => {
    const credentials = join(dir, 'introspection.json');
    writeFileSync(
      credentials,
      JSON.stringify({ client_id: introspector.clientId, client_secret: introspector.clientSecret }),
    );
    idp.openIdOnly = true;
    try {
      expect((await fetch(`${idp.issuer}/.well-known/oauth-authorization-server`)).status).toBe(404);
      const openId = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as Record<
        string,
        unknown
      >;
      expect(openId.introspection_endpoint).toBeTypeOf('string');
      const audience = 'https://api.example/opaque';
      const served = await startServe(
        [
          'examples/approvals',
          '--http',
          '127.0.0.1:0',
          '--ledger',
          `sqlite:${join(dir, 'openid-only.db')}`,
          '--oauth-issuer',
          idp.issuer,
          '--oauth-audience',
          audience,
          '--introspection-client',
          credentials,
        ],
        { BATON_KEYS },
      );
      try {
        const token = await idp.token(alice, { resource: audience });
        expect(token.split('.')).toHaveLength(1); // opaque: only introspection can check it
        const before = idp.introspections();
        const accepted = await post(served.url, `Bearer ${token}`);
        expect(accepted.status, served.stderr()).toBe(200);
        expect(idp.introspections()).toBe(before + 1);
      } finally {
        await served.stop();
      }
    } finally {
      idp.openIdOnly = false;
    }
  });
});

describe('key rotation and a JWKS outage (adapter options, in process)', () => {
  let serving: HttpServing;
  let verifier: OAuthVerifier;
  const reasons: string[] = [];

  beforeAll(async () => {
    const runner = createRunner({
      flows: approvals.filter((flow) => !flow.needsLedger),
      codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }),
    });
    const metadata = await discoverOAuthIssuer(idp.issuer);
    let ready!: (v: OAuthVerifier) => void;
    const made = new Promise<OAuthVerifier>((resolve) => {
      ready = resolve;
    });
    serving = await serveHttp({
      factory: createFlowServerFactory({ runner, requireScopes: true }),
      host: '127.0.0.1',
      port: 0,
      verifier: { verifyAccessToken: async (token) => (await made).verifyAccessToken(token) },
      oauth: { authorizationServer: metadata },
    });
    verifier = await createOAuthVerifier({
      issuer: idp.issuer,
      audience: serving.url,
      metadata,
      rolesClaim: 'groups',
      jwksCooldownMs: 0,
      jwksCacheMaxAgeMs: 500,
      onReject: (reason) => reasons.push(reason),
    });
    ready(verifier);
  });
  afterAll(async () => {
    await serving?.close();
  });

  const listOk = async (token: string) => {
    const { client } = await connectHttp(serving.url, { token });
    try {
      return (await client.listTools()).tools.length > 0;
    } finally {
      await client.close();
    }
  };

  it('accepts tokens signed with a rotated key while the server runs, and old ones still', async () => {
    const before = await idp.token(alice, { resource: serving.url.href });
    expect(await listOk(before)).toBe(true);
    const kid = await idp.rotateKeys();
    const after = await idp.token(alice, { resource: serving.url.href });
    expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).toBe(kid);
    expect(await listOk(after)).toBe(true);
    expect(await listOk(before)).toBe(true);
  });

  it('answers 503 with Retry-After while the JWKS cannot be fetched, then recovers', async () => {
    const token = await idp.token(bob, { resource: serving.url.href });
    expect(await listOk(token)).toBe(true);
    idp.jwksDown = true;
    try {
      await sleep(700); // past jwksCacheMaxAgeMs: the keys must be fetched again
      const response = await post(serving.url, `Bearer ${token}`);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('10');
      expect(reasons.at(-1)).toMatch(/JWKS cannot be fetched/);
    } finally {
      idp.jwksDown = false;
    }
    expect(await listOk(token)).toBe(true);
  });
});

describe('opaque tokens by introspection (RFC 7662)', () => {
  let serving: HttpServing;
  beforeAll(async () => {
    const runner = createRunner({
      flows: approvals.filter((flow) => !flow.needsLedger),
      codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }),
    });
    let ready!: (v: OAuthVerifier) => void;
    const made = new Promise<OAuthVerifier>((resolve) => {
      ready = resolve;
    });
    serving = await serveHttp({
      factory: createFlowServerFactory({ runner, requireScopes: true }),
      host: '127.0.0.1',
      port: 0,
      path: '/opaque',
      verifier: { verifyAccessToken: async (token) => (await made).verifyAccessToken(token) },
      oauth: { authorizationServer: { issuer: idp.issuer } },
    });
    ready(
      await createOAuthVerifier({
        issuer: idp.issuer,
        audience: serving.url,
        rolesClaim: 'groups',
        introspection: { clientId: introspector.clientId, clientSecret: introspector.clientSecret },
      }),
    );
  });
  afterAll(async () => {
    await serving?.close();
  });

  it('accepts an opaque token the issuer says is active, caches the answer, and refuses an unknown one', async () => {
    const token = await idp.token(alice, { resource: serving.url.href });
    expect(token.split('.')).toHaveLength(1);
    const before = idp.introspections();
    const { client } = await connectHttp(serving.url, { token });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    const after = idp.introspections();
    expect(after - before).toBe(1); // several requests, one introspection: cached by digest
    const refused = await post(serving.url, 'Bearer not-a-token-the-issuer-knows-0123456789');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});

describe('claims to principal, roles and scopes (the shapes providers send)', () => {
  const mapping = { issuer: 'https://idp.example.com/realms/acme' };
  const resource = new URL('https://baton.example.com/mcp');
  const exp = Math.floor(Date.now() / 1000) + 60;

  it('reads Keycloak realm roles, Auth0 namespaced claims, Entra scp, and maps groups', () => {
    expect(
      rolesOf(
        { realm_access: { roles: ['manager', 'offline_access'] } },
        { ...mapping, rolesClaim: 'realm_access.roles' },
      ),
    ).toEqual(['manager', 'offline_access']);
    expect(
      rolesOf(
        { 'https://baton.example.com/roles': ['finance'] },
        { ...mapping, rolesClaim: 'https://baton.example.com/roles' },
      ),
    ).toEqual(['finance']);
    expect(
      rolesOf(
        { groups: ['g-1', 'g-2', 'g-3'] },
        { ...mapping, rolesClaim: 'groups', groupRoles: { 'g-1': ['manager'], 'g-3': ['finance', 'manager'] } },
      ),
    ).toEqual(['manager', 'finance']);
    expect(rolesOf({ roles: 'not-a-list-but-a-string' }, mapping)).toEqual(['not-a-list-but-a-string']);
    expect(rolesOf({ roles: [1, {}, 'ok'] }, mapping)).toEqual(['ok']);
    expect(scopesOf({ scp: 'baton:call baton:decide' })).toEqual(['baton:call', 'baton:decide']);
    expect(scopesOf({ scp: ['baton:call'] })).toEqual(['baton:call']);
    expect(scopesOf({})).toEqual(['baton:call']);
    expect(scopesOf({ scope: '' })).toEqual([]);
  });

  it('the principal is <iss>#<sub> (or the principal claim), never the e-mail; the name is display only', () => {
    const info = authInfoOf('t', { sub: 'f81d', oid: 'o-1', email: 'a@example.com', exp }, mapping, resource);
    expect(info).toMatchObject({
      extra: { principal: 'https://idp.example.com/realms/acme#f81d', displayName: 'a@example.com' },
    });
    const byOid = authInfoOf('t', { sub: 'f81d', oid: 'o-1', exp }, { ...mapping, principalClaim: 'oid' }, resource);
    expect(byOid).toMatchObject({ extra: { principal: 'https://idp.example.com/realms/acme#o-1' } });
    expect(authInfoOf('t', { exp }, mapping, resource)).toBe('the token has no "sub" claim');
    expect(authInfoOf('t', { sub: 'x' }, mapping, resource)).toBe('the token has no expiry');
  });
});
