/**
 * Inspector benchmark (not a test): what an attached inspector costs a flow.
 * Complete runs of deploy_production (two rounds: start, then both answers;
 * and three rounds, one answer each) through two runners in the same process,
 * one without an inspector (the baseline) and one with a no-op inspector, in
 * alternating 100 ms slices (each side first in turn). Prints, per scenario,
 * the median of the paired slices' ratios (runs/s without / with: 1.10 means
 * the inspector costs 10%) and writes bench/reports/inspect.json.
 * Run: `pnpm tsx scripts/bench-inspect.ts [seconds per scenario]`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import {
  type CallContext,
  createRequestStateCodec,
  createRunner,
  generateKey,
  type Inspector,
  type RoundOutcome,
  type Runner,
} from '@baton/engine';
import { deployProduction } from '../examples/approvals/index.js';

const seconds = Number(process.argv[2] ?? 3);
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const context: CallContext = { principal: 'bench', method: 'tools/call', target: 'deploy_production' };

const scenarios = [
  {
    name: 'deploy_production (2 rounds)',
    args: { version: '1.2.3' },
    rounds: [{ confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-1234' }) }],
  },
  {
    name: 'deploy_production (3 rounds)',
    args: { version: '1.2.4' },
    rounds: [{ confirm_deploy: accept({ confirm: true }) }, { change_ticket: accept({ ticket: 'CHG-1235' }) }],
  },
];

function runnerWith(inspect: Inspector | undefined): Runner {
  return createRunner({
    flows: [deployProduction],
    codec: createRequestStateCodec({ keys: [generateKey()] }),
    ...(inspect ? { inspect } : {}),
  });
}

/** One complete run of a scenario. */
function complete(runner: Runner, s: (typeof scenarios)[number]) {
  return async () => {
    let outcome: RoundOutcome = await runner.run({ flow: 'deploy_production', args: s.args, context });
    for (const responses of s.rounds) {
      if (outcome.type !== 'input_required') throw new Error(`unexpected ${outcome.type}`);
      outcome = await runner.run({
        flow: 'deploy_production',
        args: s.args,
        context,
        requestState: outcome.requestState,
        inputResponses: responses,
      });
    }
    if (outcome.type !== 'complete') throw new Error(`unexpected ${outcome.type}`);
  };
}

async function slice(fn: () => Promise<void>, ms: number): Promise<number> {
  let runs = 0;
  const start = performance.now();
  while (performance.now() < start + ms) {
    await fn();
    runs++;
  }
  return runs / ((performance.now() - start) / 1000);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  let events = 0;
  const noop: Inspector = () => {
    events++;
  };
  const results = [];
  for (const s of scenarios) {
    const without = complete(runnerWith(undefined), s);
    const withInspector = complete(runnerWith(noop), s);
    for (let i = 0; i < 200; i++) {
      await without();
      await withInspector();
    }
    events = 0;
    const slices = Math.max(6, Math.round((seconds * 1000) / 200));
    const ratios: number[] = [];
    const rates = { without: [] as number[], with: [] as number[] };
    for (let i = 0; i < slices; i++) {
      const first = i % 2 === 0;
      const a = first ? await slice(without, 100) : 0;
      const b = await slice(withInspector, 100);
      const c = first ? a : await slice(without, 100);
      rates.without.push(c);
      rates.with.push(b);
      ratios.push(c / b);
    }
    results.push({
      scenario: s.name,
      runsPerSecondWithout: Math.round(median(rates.without)),
      runsPerSecondWith: Math.round(median(rates.with)),
      ratio: Number(median(ratios).toFixed(3)),
      eventsPerRun: Math.round(events / rates.with.reduce((sum, r) => sum + r / 10, 0)),
    });
  }
  console.table(results);
  const worst = Math.max(...results.map((r) => r.ratio));
  console.log(`inspector cost (median ratio, worst scenario): ${worst.toFixed(3)}x (target <= 1.10x)`);
  mkdirSync('bench/reports', { recursive: true });
  writeFileSync(
    'bench/reports/inspect.json',
    `${JSON.stringify({ node: process.version, seconds, date: new Date().toISOString(), results }, null, 2)}\n`,
  );
  console.log('wrote bench/reports/inspect.json');
}

await main();
