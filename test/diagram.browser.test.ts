/**
 * Every diagram `toMermaid` draws parses with Mermaid itself: the example
 * flows and the flows built for the graph model's edge cases (`always`
 * states, root-level transitions, deadlines, invocations, nested and parallel
 * states, states named like Mermaid's keywords), each given to
 * `mermaid.parse` in headless Debian Chromium (playwright-core), with
 * Mermaid's bundle loaded from node_modules (no network). Skipped (with a
 * message) when /usr/bin/chromium is missing locally; fails under CI=true.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defineFlow, toMermaid } from '@baton/engine';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import approvals from '../examples/approvals/index.js';
import { graphFlows } from '../packages/engine/test/fixtures/graphFlows.js';
import { nested } from './helpers/nestedFlow.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const inCi = process.env.CI === 'true';
const MERMAID = resolve(import.meta.dirname, 'node_modules', 'mermaid', 'dist', 'mermaid.min.js');
/** Words of Mermaid's state diagram grammar, each tried as a state name on its own. */
const KEYWORDS = [
  'state',
  'note',
  'class',
  'classDef',
  'style',
  'direction',
  'click',
  'accTitle',
  'accDescr',
  'end',
  'hide',
  'as',
  'default',
  'left',
  'right',
  'of',
];

/** A flow with a state named `word` at the top level and inside a compound state. */
const keywordFlow = (word: string) =>
  defineFlow({
    name: `keyword_${word}`,
    description: 'd',
    args: z.object({}),
    inputs: {},
    machine: setup({}).createMachine({
      id: 'k',
      initial: 'start',
      states: {
        start: { on: { go: word, deeper: 'box' } },
        [word]: { on: { back: 'start', [word]: 'box' } },
        box: { initial: word, states: { [word]: { on: { next: 'fin' } }, fin: { type: 'final' } }, onDone: 'start' },
      },
    }),
  });
const SKIP_NOTE = `skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`;

if (!hasChromium && !inCi) console.warn(`diagram.browser.test.ts ${SKIP_NOTE}`);

describe.skipIf(!hasChromium && !inCi)('toMermaid output parses with Mermaid in headless Chromium', () => {
  let context: BrowserContext;
  let profile: string;
  let page: Page;

  beforeAll(async () => {
    if (!hasChromium)
      throw new Error(`CI=true but ${CHROMIUM} is missing: install it with apt-get install -y chromium`);
    profile = await mkdtemp(join(tmpdir(), 'baton-mermaid-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    page = await context.newPage();
    await page.setContent('<!doctype html><html><body></body></html>');
    await page.addScriptTag({ path: MERMAID });
    await page.evaluate(() => (globalThis as any).mermaid.initialize({ startOnLoad: false }));
  });

  afterAll(async () => {
    await context?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  /** Mermaid's verdict on a diagram: `'ok'` or its parse error. */
  const parse = (text: string) =>
    page.evaluate(async (source) => {
      try {
        await (globalThis as any).mermaid.parse(source);
        return 'ok';
      } catch (error) {
        return String((error as Error).message ?? error);
      }
    }, text);

  it('rejects a diagram that is not valid Mermaid (the check can fail)', async () => {
    expect(await parse('stateDiagram-v2\n  [*] --> state\n')).not.toBe('ok');
  });

  it.each([...approvals, nested, ...graphFlows].map((flow) => [flow.name, flow] as const))(
    'the diagram of %s parses',
    async (_name, flow) => {
      const text = toMermaid(flow);
      expect(await parse(text), text).toBe('ok');
    },
  );

  it.each(KEYWORDS)('a state named %s, top-level and nested, parses', async (word) => {
    const text = toMermaid(keywordFlow(word));
    expect(await parse(text), text).toBe('ok');
  });
});
