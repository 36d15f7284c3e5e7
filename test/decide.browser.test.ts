/**
 * The decision pages (`/inbox`, `/decide/<id>`) in a real browser: headless
 * Debian Chromium (playwright-core) against a real oidc-provider and two
 * `baton serve` instances on one SQLite ledger (`helpers/decidePages.ts`).
 * Covered: bob (manager) follows the link of a captured `decision.requested`
 * notification, signs in at the provider, sees the request (its message
 * shown as text, never as markup), approves, and the flow has advanced as
 * seen from the other instance; alice, the requester, is refused by four
 * eyes (403); carol, without the role, is refused (403); a rejected answer
 * (a comment over the schema's limit, submitted past the browser's own
 * check) is shown beside the form with the values kept (422); two tabs
 * submitting the same decision record it once, and the second says it was
 * already decided (409), by whom; a decided request says so on any later
 * visit; a decision whose deadline passed while its page was open says so
 * on submit (410); a POST without the session's CSRF token or from another origin is
 * refused; every page carries the strict security headers; the inbox lists
 * a new request without a reload; bob hands a decision to carol with the
 * page's "hand to…" form, and carol approves it for bob. Skipped (with a message) when
 * /usr/bin/chromium is missing locally; fails under CI=true.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, hasChromium, launchChromium } from './helpers/chromium.js';
import { type DecisionPagesScenario, signInAt, startDecisionPages } from './helpers/decidePages.js';

const inCi = process.env.CI === 'true';
const SKIP_NOTE = `skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`;
if (!hasChromium && !inCi) console.warn(`decide.browser.test.ts ${SKIP_NOTE}`);

/** A purpose an attacker chose: it must show as text. */
const HOSTILE = '<img src=x id=pwned onerror="document.title=1"> team dinner';

describe.skipIf(!hasChromium && !inCi)('decision pages in headless Chromium', () => {
  let scenario: DecisionPagesScenario;
  let first: BrowserContext;
  let browser: Browser;
  /** One signed-in browser context per person (cookies apart). */
  const people = new Map<string, BrowserContext>();

  beforeAll(async () => {
    if (!hasChromium)
      throw new Error(`CI=true but ${CHROMIUM} is missing: install it with apt-get install -y chromium`);
    scenario = await startDecisionPages();
    first = await launchChromium();
    browser = first.browser()!;
  }, 120_000);

  afterAll(async () => {
    for (const context of people.values()) await context.close();
    await first?.close();
    await scenario?.close();
  });

  const contextOf = async (who: string) => {
    let context = people.get(who);
    if (!context) {
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      people.set(who, context);
    }
    return context;
  };

  /** Open `link` as `who`, signing in at the provider when sent there; the page and the last status. */
  const open = async (who: string, link: string): Promise<{ page: Page; status: number }> => {
    const page = await (await contextOf(who)).newPage();
    const origin = new URL(link).origin;
    const response = await page.goto(link);
    if (!page.url().startsWith(origin)) {
      await signInAt(page, who, origin);
      const reloaded = await page.reload();
      return { page, status: reloaded!.status() };
    }
    return { page, status: response!.status() };
  };

  it('bob follows the notified link, signs in, sees the request as text and approves; the other instance sees it advance', async () => {
    const id = await scenario.requestExpense(250, HOSTILE);
    const notified = await scenario.notification(id);
    const link = notified.data.url!;
    expect(link).toBe(new URL(`/decide/${id}?key=manager_approval`, scenario.a.url).href);

    const { page, status } = await open('bob', link);
    expect(status).toBe(200);
    await expect(page.locator('h1.message').textContent()).resolves.toContain(HOSTILE);
    expect(await page.locator('#pwned').count()).toBe(0);
    expect(await page.title()).not.toBe('1');
    await expect(page.locator('.bar .who span').textContent()).resolves.toBe('Bob Manager');
    await expect(page.locator('.facts').textContent()).resolves.toMatch(/Decide by/);
    await expect(page.locator('.requester').textContent()).resolves.toBe('alice');
    await expect(page.locator('.args').textContent()).resolves.toContain('250');

    await page.check('input[name="f.approve"][value="true"]');
    await page.fill('textarea[name="f.comment"]', 'Enjoy <b>it</b>');
    await Promise.all([page.waitForNavigation(), page.click('button[value="accept"]')]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Decision recorded');
    await expect(page.locator('.sentence').textContent()).resolves.toMatch(/^Recorded manager_approval/);

    await expect(scenario.resumeOnB(id)).resolves.toContain('Expense of 250 approved.');

    // Later visits say it is over, on either instance.
    const again = await page.goto(new URL(`/decide/${id}`, scenario.b.url).href);
    expect(again!.status()).toBe(410);
    await expect(page.locator('h1').textContent()).resolves.toBe('Nothing left to decide');
  });

  it('alice, the requester, is refused by four eyes; carol, without the role, is refused', async () => {
    const id = await scenario.requestExpense(40, 'taxi');
    const link = new URL(`/decide/${id}`, scenario.b.url).href;
    const alice = await open('alice', link);
    expect(alice.status).toBe(403);
    await expect(alice.page.locator('h1').textContent()).resolves.toBe('You cannot decide your own request');
    await expect(alice.page.locator('.sentence').textContent()).resolves.toMatch(/four eyes/);
    expect(await alice.page.locator('form.answer').count()).toBe(0);

    const carol = await open('carol', link);
    expect(carol.status).toBe(403);
    await expect(carol.page.locator('h1').textContent()).resolves.toBe('You may not make this decision');
    await expect(carol.page.locator('.sentence').textContent()).resolves.toMatch(/role "manager"/);
  });

  it('bob hands the decision to carol with the page form; carol, without the role, approves it for bob', async () => {
    const id = await scenario.requestExpense(45, 'parking');
    const link = new URL(`/decide/${id}`, scenario.a.url).href;
    const bob = await open('bob', link);
    await bob.page.click('form.hand summary');
    await bob.page.fill('form.hand input[name="to"]', 'carol');
    await bob.page.fill('form.hand input[name="reason"]', 'on leave');
    const [handed] = await Promise.all([bob.page.waitForNavigation(), bob.page.click('button[value="delegate"]')]);
    expect(handed!.status()).toBe(200);
    await expect(bob.page.locator('h1').textContent()).resolves.toBe('Handed over');
    // Bob no longer may; carol may, for bob.
    expect((await open('bob', link)).status).toBe(403);
    const carol = await open('carol', link);
    expect(carol.status).toBe(200);
    await expect(carol.page.locator('.delegated').textContent()).resolves.toBe(
      'for bob (handed to you by bob: on leave)',
    );
    await carol.page.check('input[name="f.approve"][value="true"]');
    const [response] = await Promise.all([carol.page.waitForNavigation(), carol.page.click('button[value="accept"]')]);
    expect(response!.status()).toBe(200);
    await expect(carol.page.locator('h1').textContent()).resolves.toBe('Decision recorded');
  });

  it('a rejected answer is shown beside the form with the values kept', async () => {
    const id = await scenario.requestExpense(60, 'books');
    const { page } = await open('bob', new URL(`/decide/${id}`, scenario.a.url).href);
    await page.check('input[name="f.approve"][value="false"]');
    // Past the browser's own check: the server (the engine) judges the answer.
    await page.evaluate(() =>
      (globalThis as any).document.querySelector('textarea[name="f.comment"]').removeAttribute('maxlength'),
    );
    const long = 'x'.repeat(501);
    await page.fill('textarea[name="f.comment"]', long);
    const [response] = await Promise.all([page.waitForNavigation(), page.click('button[value="accept"]')]);
    expect(response!.status()).toBe(422);
    await expect(page.locator('#problem').textContent()).resolves.toMatch(/comment/);
    await expect(page.locator('.field[data-field="comment"] .issue').textContent()).resolves.not.toBe('');
    await expect(page.locator('textarea[name="f.comment"]').inputValue()).resolves.toBe(long);
    expect(await page.locator('input[name="f.approve"][value="false"]').isChecked()).toBe(true);
  });

  it('two tabs submitting the same decision record it once; the second says already decided, by whom', async () => {
    // Above 1000 the request goes on to finance: the manager's decision is decided, the request still waits.
    const id = await scenario.requestExpense(2000, 'laptop');
    const link = new URL(`/decide/${id}`, scenario.a.url).href;
    const one = (await open('bob', link)).page;
    const two = await (await contextOf('bob')).newPage();
    await two.goto(new URL(`/decide/${id}`, scenario.b.url).href);
    for (const tab of [one, two]) await tab.check('input[name="f.approve"][value="true"]');
    const [a, b] = await Promise.all(
      [one, two].map(async (tab) => {
        const [response] = await Promise.all([tab.waitForNavigation(), tab.click('button[value="accept"]')]);
        return response!.status();
      }),
    );
    expect([a, b].sort()).toEqual([200, 409]);
    const loser = a === 409 ? one : two;
    await expect(loser.locator('h1').textContent()).resolves.toBe('Already decided');
    await expect(loser.locator('.sentence').textContent()).resolves.toMatch(/decided by you at /);
    // Recorded once: the request moved on to finance exactly once.
    await expect(scenario.resumeOnB(id)).resolves.toMatch(/finance_approval/);

    // Another manager opening the decision's link later is told it was decided, and by whom.
    const dave = await open('dave', `${link}?key=manager_approval`);
    expect(dave.status).toBe(409);
    await expect(dave.page.locator('.sentence').textContent()).resolves.toMatch(
      /already been made\. It was decided by bob at /,
    );
  });

  it('a decision whose deadline passed while its page was open says so on submit (410)', async () => {
    const id = await scenario.requestQuick();
    const link = new URL(`/decide/${id}`, scenario.a.url).href;
    const { page, status } = await open('bob', link);
    expect(status).toBe(200);
    await page.check('input[name="f.approve"][value="true"]');
    // The scheduler of either instance ends it on time (3 s, plus its 1 s poll and a loaded machine).
    let text = '';
    for (const started = Date.now(); Date.now() - started < 30_000 && !/expired/.test(text); ) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      text = await scenario.resumeOnB(id);
    }
    expect(text).toContain('expired: nobody decided within 3 seconds');
    const [response] = await Promise.all([page.waitForNavigation(), page.click('button[value="accept"]')]);
    expect(response!.status()).toBe(410);
    await expect(page.locator('h1').textContent()).resolves.toBe('This decision has expired');
  });

  it('refuses a POST without the session CSRF token or from another origin, and sends the strict headers', async () => {
    const id = await scenario.requestExpense(70, 'pens');
    const link = new URL(`/decide/${id}`, scenario.a.url).href;
    const { page, status } = await open('bob', link);
    expect(status).toBe(200);
    const request = (await contextOf('bob')).request;
    const shown = await request.get(link);
    const csp = shown.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(shown.headers()['x-frame-options']).toBe('DENY');
    expect(shown.headers()['referrer-policy']).toBe('no-referrer');
    const token = await page.locator('form.answer input[name="_csrf"]').inputValue();
    const body = { _action: 'accept', 'f.approve': 'true' };
    const noToken = await request.post(link, { form: body, headers: { origin: new URL(link).origin } });
    expect(noToken.status()).toBe(403);
    const foreign = await request.post(link, {
      form: { ...body, _csrf: token },
      headers: { origin: 'http://evil.example' },
    });
    expect(foreign.status()).toBe(403);
    // Nothing was recorded: the page still asks.
    expect((await request.get(link)).status()).toBe(200);
    // The cookies are HttpOnly, SameSite=Lax.
    const cookies = await (await contextOf('bob')).cookies();
    const session = cookies.find((cookie) => cookie.name.endsWith('baton_session'));
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
  });

  it('the inbox lists what bob may decide, and a new request appears without a reload', async () => {
    const page = await (await contextOf('bob')).newPage();
    await page.goto(new URL('/inbox', scenario.b.url).href);
    await page.waitForSelector('body[data-live="true"]');
    const id = await scenario.requestExpense(90, 'train');
    await page.waitForSelector(`li[data-request="${id}"]`, { timeout: 30_000 });
    const href = await page.locator(`li[data-request="${id}"] a`).getAttribute('href');
    expect(href).toBe(`/decide/${id}?key=manager_approval`);
    const alice = await (await contextOf('alice')).newPage();
    await alice.goto(new URL('/inbox', scenario.b.url).href);
    expect(await alice.locator(`li[data-request="${id}"]`).count()).toBe(0);
  });
});
