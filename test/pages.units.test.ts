/**
 * The decision pages' pure parts, without a browser: the form renderer on
 * every field kind an elicitation schema may hold (titles, descriptions,
 * defaults, bounds, formats, single and multiple choices, escaped), the
 * typed content it reads back (which the engine's own decision validation
 * accepts), and the sealed cookies (a tampered cookie, another cookie kind's
 * value or an unknown key opens to nothing; a rotated ring still opens a
 * cookie sealed under its older key); the start-up checks of the pages'
 * flags; a quorum decision's line (approvals still needed, who approved); and
 * the page a decision link answers on a server without the pages (escaped).
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyRing, decision, type ElicitationSchema, generateKey } from '@baton/engine';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parsePagesFlags } from '../packages/adapters/src/cli/pagesServe.js';
import { decideElsewhereRoutes, startupWarning } from '../packages/adapters/src/pages/decideElsewhere.js';
import { pageQuorum } from '../packages/adapters/src/pages/decisionPort.js';
import { readAnswer, renderFields, submittedFields } from '../packages/adapters/src/pages/form.js';
import { sealedCookie } from '../packages/adapters/src/pages/sealedCookie.js';
import { decideBody, inboxList } from '../packages/adapters/src/pages/views.js';

const verdict = decision({
  message: 'Decide',
  role: 'manager',
  schema: z.object({
    approve: z.boolean().describe('Approve?'),
    reason: z.string().min(3).max(40).describe('Why'),
    contact: z.email().optional(),
    link: z.url().optional(),
    day: z.iso.date().optional(),
    at: z.iso.datetime().optional(),
    amount: z.number().min(1).max(5000),
    seats: z.number().int().min(0).max(9).default(2),
    tier: z.enum(['gold', 'silver']),
    tags: z
      .array(z.enum(['travel', 'food', 'lodging']))
      .max(2)
      .optional(),
    notes: z.string().max(2000).optional(),
  }),
});

const hostile: ElicitationSchema = {
  type: 'object',
  properties: {
    pick: {
      type: 'string',
      title: '<b>Pick</b>',
      description: '"quoted" & <i>described</i>',
      oneOf: [
        { const: 'a', title: '<script>alert(1)</script>' },
        { const: 'b"c', title: 'B' },
      ],
    },
    named: { type: 'string', enum: ['x', 'y'], enumNames: ['Ex', 'Why'], default: 'y' },
  },
  required: ['pick'],
};

describe('the decision form', () => {
  it('renders every field kind with its bounds, formats, choices and defaults', () => {
    const out = renderFields(verdict.requestedSchema).value;
    expect(out).toContain('<input type="radio" name="f.approve" value="true" required> Yes');
    expect(out).toMatch(/name="f.reason" type="text" value="" minlength="3" maxlength="40" required/);
    expect(out).toContain('name="f.contact" type="email"');
    expect(out).toContain('name="f.link" type="url"');
    expect(out).toContain('name="f.day" type="date"');
    expect(out).toMatch(/name="f.at" type="text" placeholder="2026-12-31T17:00:00Z"/);
    expect(out).toMatch(/name="f.amount" type="number" inputmode="decimal" step="any" min="1" max="5000"/);
    expect(out).toMatch(/name="f.seats" type="number" inputmode="numeric" step="1" min="0" max="9" value="2"/);
    expect(out).toContain('<option value="gold">gold</option>');
    expect(out).toContain('<input type="checkbox" name="f.tags" value="lodging">');
    expect(out).toContain('<textarea id="field-notes" name="f.notes" rows="3" maxlength="2000"></textarea>');
    expect(out).toContain('<label class="label" for="field-reason">Why <span class="req"');
    expect(out).toContain('at most 2 choices');
  });

  it('escapes titles, descriptions and choices, and keeps titled and named choices', () => {
    const out = renderFields(hostile).value;
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<b>');
    expect(out).toContain('&lt;b&gt;Pick&lt;/b&gt;');
    expect(out).toContain('&quot;quoted&quot; &amp; &lt;i&gt;described&lt;/i&gt;');
    expect(out).toContain('<option value="a">&lt;script&gt;alert(1)&lt;/script&gt;</option>');
    expect(out).toContain('<option value="b&quot;c">B</option>');
    expect(out).toContain('<option value="y" selected>Why</option>');
  });

  it('reads the submitted fields back as typed content that the decision accepts, and shows them again', () => {
    const form = new URLSearchParams([
      ['_csrf', 't'],
      ['f.approve', 'false'],
      ['f.reason', 'too dear'],
      ['f.contact', ''],
      ['f.amount', '12.5'],
      ['f.seats', '3'],
      ['f.tier', 'silver'],
      ['f.tags', 'travel'],
      ['f.tags', 'food'],
      ['f.unknown', 'ignored'],
    ]);
    const fields = submittedFields(verdict.requestedSchema, form);
    const content = readAnswer(verdict.requestedSchema, fields);
    expect(content).toEqual({
      approve: false,
      reason: 'too dear',
      amount: 12.5,
      seats: 3,
      tier: 'silver',
      tags: ['travel', 'food'],
    });
    expect(verdict.parseAnswer({ action: 'accept', content }).ok).toBe(true);
    // A number that does not parse stays text, for the engine to refuse.
    const bad = readAnswer(verdict.requestedSchema, { ...fields, amount: 'lots' });
    expect(bad.amount).toBe('lots');
    expect(verdict.parseAnswer({ action: 'accept', content: bad }).ok).toBe(false);
    const again = renderFields(verdict.requestedSchema, fields).value;
    expect(again).toContain('<input type="radio" name="f.approve" value="false" checked> No');
    expect(again).toContain('<input type="checkbox" name="f.tags" value="food" checked>');
    expect(again).toContain('<option value="silver" selected>silver</option>');
  });
});

describe('sealed cookies', () => {
  const request = (cookie: string) => new Request('http://127.0.0.1/', { headers: { cookie: cookie.split(';')[0]! } });

  it('open only untampered values of their own kind, under any key of the ring', async () => {
    const old = generateKey();
    const keys = createKeyRing([old]);
    const options = { keys, name: 'baton_session', maxAgeSeconds: 60, secure: true };
    const session = sealedCookie<{ p: string }>({ ...options, purpose: 'page-session' });
    const login = sealedCookie<{ p: string }>({ ...options, name: 'baton_session', purpose: 'page-login' });
    const set = await session.seal({ p: 'bob' });
    expect(set).toMatch(/^__Host-baton_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=60$/);
    expect(set).not.toContain('bob');
    await expect(session.open(request(set))).resolves.toEqual({ p: 'bob' });
    await expect(login.open(request(set))).resolves.toBeUndefined();
    const value = set.split(';')[0]!;
    const tampered = `${value.slice(0, -3)}${value.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    await expect(session.open(request(tampered))).resolves.toBeUndefined();
    const rotated = sealedCookie<{ p: string }>({
      ...options,
      keys: createKeyRing([generateKey(), old]),
      purpose: 'page-session',
    });
    await expect(rotated.open(request(set))).resolves.toEqual({ p: 'bob' });
    const stranger = sealedCookie<{ p: string }>({
      ...options,
      keys: createKeyRing([generateKey()]),
      purpose: 'page-session',
    });
    await expect(stranger.open(request(set))).resolves.toBeUndefined();
    expect(session.clear()).toContain('Max-Age=0');
  });
});

describe('the pages flags of baton serve', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-pages-flags-'));
  const secret = join(dir, 'secret');
  writeFileSync(secret, 'web-secret-0123456789\n');
  const base = { 'oauth-issuer': 'https://idp.example.com', ledger: 'memory:', 'login-client-id': 'web' };
  const refused = (values: Record<string, string | boolean>) => {
    try {
      parsePagesFlags(values, 'usage');
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };

  it('reads the secret from its file and checks the public URL', () => {
    expect(parsePagesFlags({ ...base, 'login-client-secret-file': secret }, 'usage')).toEqual({
      clientId: 'web',
      clientSecret: 'web-secret-0123456789',
    });
    const flags = parsePagesFlags(
      { ...base, 'login-client-secret-file': secret, 'public-url': 'https://baton.example.com' },
      'usage',
    );
    expect(flags?.publicUrl?.href).toBe('https://baton.example.com/');
    expect(parsePagesFlags({}, 'usage')).toBeUndefined();
  });

  it('refuses what cannot work, in one line that never holds the secret', () => {
    const cases: [Record<string, string | boolean>, RegExp][] = [
      [{ ...base, 'oauth-issuer': undefined as never }, /give --oauth-issuer/],
      [{ ...base, ledger: undefined as never }, /give --ledger/],
      [{ ...base }, /needs --login-client-secret-file/],
      [{ ...base, 'login-client-secret-file': join(dir, 'missing') }, /cannot read .*ENOENT/],
      [{ ...base, 'login-client-secret-file': secret, 'public-url': 'http://baton.example.com' }, /must be https/],
      [{ ...base, 'login-client-secret-file': secret, 'public-url': 'https://x.example.com/baton' }, /no path/],
      [{ ...base, 'login-client-secret-file': secret, stdio: true }, /--http only/],
      [{ 'login-client-secret-file': secret }, /needs --login-client-id/],
    ];
    for (const [values, reason] of cases) {
      const defined = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
      const message = refused(defined);
      expect(message, JSON.stringify(defined)).toMatch(reason);
      expect(message).not.toContain('web-secret');
    }
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('quorum decisions on the pages', () => {
  const quorum = {
    required: 2,
    approvals: 1,
    needed: 1,
    votes: [
      { decider: 'Bob <Builder>', approves: true, you: false, decidedAt: Date.UTC(2026, 11, 2, 9) },
      { decider: 'carol', approves: false, you: true, decidedAt: Date.UTC(2026, 11, 2, 10) },
    ],
  };

  it('shows the approvals still needed and who approved, escaped, in the inbox and on the decision page', () => {
    const item = { id: 'R1', key: 'board_approval', flow: 'board_spend', message: 'Approve?', requestedAt: 0, quorum };
    const list = inboxList([item]).toString();
    expect(list).toContain(
      '<span class="quorum" data-needed="1">1 of 2 approvals (Bob &lt;Builder&gt;) · 1 more needed</span>',
    );
    const page = decideBody(
      {
        id: 'R1',
        key: 'board_approval',
        flow: 'board_spend',
        message: 'Approve?',
        requestedSchema: { type: 'object', properties: { approve: { type: 'boolean' } }, required: ['approve'] },
        decisions: [],
        quorum: pageQuorum(quorum),
      },
      'csrf',
    ).toString();
    expect(page).toContain(
      '<dt>Approvals</dt><dd><span class="quorum" data-needed="1">1 of 2 approvals (Bob &lt;Builder&gt;)',
    );
    // Without a quorum, nothing of it.
    expect(inboxList([{ ...item, quorum: undefined }]).toString()).not.toContain('class="quorum"');
  });

  it('names a voter signed in through an identity provider by its sub, as the rest of the page names principals', () => {
    const signedIn = {
      ...quorum,
      votes: [{ decider: 'https://id.example.com/realms/acme#bob', approves: true, you: false, decidedAt: 0 }],
    };
    expect(pageQuorum(signedIn).approvedBy).toEqual(['bob']);
  });
});

describe('the decide page and inbox with delegation', () => {
  const view = {
    id: 'R'.repeat(22),
    key: 'manager_approval',
    flow: 'expense_approval',
    message: 'Approve <250>?',
    requestedSchema: verdict.requestedSchema,
    decisions: [{ key: 'finance_approval', by: 'dave', for: 'bob' }],
    delegated: 'for bob (handed to you by bob: on leave)',
    handedOver: 'handed by bob to dave (on <leave>)',
  };

  it('shows whom the caller decides for, the hand-over, "decided by Y for X", and the hand-to form with its CSRF token', () => {
    const page = String(decideBody(view, 'csrf-token-1', undefined, true));
    expect(page).toContain('<dd class="delegated">for bob (handed to you by bob: on leave)</dd>');
    expect(page).toContain('<dd class="handed">handed by bob to dave (on &lt;leave&gt;)</dd>');
    expect(page).toContain('<strong>finance_approval</strong> by dave for bob');
    const hand = page.slice(page.indexOf('<form class="hand"'));
    expect(hand).toContain('<input type="hidden" name="_csrf" value="csrf-token-1">');
    expect(hand).toContain('name="to" required');
    expect(hand).toContain('name="_action" value="delegate"');
    // Without a delegate port (a page on a runner that cannot delegate), no form.
    expect(String(decideBody(view, 'csrf-token-1'))).not.toContain('class="hand"');
  });

  it('marks inbox items that came through a delegation', () => {
    const base = { id: 'R'.repeat(22), key: 'k', flow: 'f', message: 'm', requestedAt: 0 };
    const list = String(
      inboxList([
        { ...base, delegated: { kind: 'handover', onBehalfOf: 'bob', by: 'bob' } },
        { ...base, id: 'S'.repeat(22), delegated: { kind: 'absence', onBehalfOf: 'bob' } },
        { ...base, id: 'T'.repeat(22) },
      ]),
    );
    expect(list).toContain('<span class="delegated" data-kind="handover">handed to you by bob, for bob</span>');
    expect(list).toContain('<span class="delegated" data-kind="absence">for bob, who is away</span>');
    expect(list.match(/class="delegated"/g)).toHaveLength(2);
  });
});

describe('decision links without the pages', () => {
  const routes = decideElsewhereRoutes();
  const get = (path: string, method = 'GET') => routes.get(path)!(new Request(`http://127.0.0.1${path}`, { method }));

  it('names the request of a well-formed link only, and never echoes anything else', async () => {
    const named = await (await routes.get('/decide/*')!(new Request('http://127.0.0.1/decide/R7xAbc_-9'))).text();
    expect(named).toContain('<code>R7xAbc_-9</code>');
    const hostile = await routes.get('/decide/*')!(new Request('http://127.0.0.1/decide/%3Cimg%20src=x%3E'));
    expect(hostile.status).toBe(200);
    const text = await hostile.text();
    expect(text).not.toContain('<img');
    expect(text).not.toContain('%3Cimg');
    expect(text).toContain('/api/decisions/&lt;id&gt;');
    expect((await get('/inbox')).status).toBe(200);
    const posted = await get('/inbox', 'POST');
    expect(posted.status).toBe(405);
    expect(posted.headers.get('allow')).toBe('GET, HEAD');
  });

  it('says in one line what the pages would need, with an issuer or without', () => {
    expect(startupWarning('issuer')).toMatch(/need --oauth-issuer and --login-client-id$/);
    expect(startupWarning('login-client')).toMatch(/pages need --login-client-id$/);
    for (const missing of ['issuer', 'login-client'] as const) expect(startupWarning(missing)).not.toContain('\n');
  });
});
