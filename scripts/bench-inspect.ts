/**
 * Inspector benchmark (not a test): what an attached inspector costs a flow.
 * Complete runs of deploy_production (two rounds: start, then both answers;
 * and three rounds, one answer each) through two runners in the same process,
 * one without an inspector (the baseline) and one with a no-op inspector, in
 * alternating 50 ms slices (each side first in turn). A slice's rate is runs
 * per second of this process's CPU time (user + system, GC threads included):
 * on a shared machine a wall-clock slice also counts the time another process
 * had the core. Prints, per scenario, the median of the paired slices' ratios
 * (without / with: 1.10 means the inspector costs 10%), the wall-clock ratio
 * beside it, and writes bench/reports/inspect.json.
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

/** Runs, and runs per second of CPU time and of wall-clock time over `ms` of wall-clock time. */
async function slice(fn: () => Promise<void>, ms: number): Promise<{ runs: number; cpu: number; wall: number }> {
  let runs = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  while (performance.now() < start + ms) {
    await fn();
    runs++;
  }
  const wall = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return { runs, cpu: runs / ((used.user + used.system) / 1e6), wall: runs / wall };
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
    // Warm up until both sides are optimised (a short warm-up favours whichever scenario runs second).
    const warm = performance.now() + 1500;
    while (performance.now() < warm) {
      await without();
      await withInspector();
    }
    events = 0;
    const sliceMs = 50;
    const slices = Math.max(12, Math.round((seconds * 1000) / (2 * sliceMs)));
    const ratios: number[] = [];
    const wallRatios: number[] = [];
    const rates = { without: [] as number[], with: [] as number[] };
    let withRuns = 0;
    for (let i = 0; i < slices; i++) {
      const first = i % 2 === 0;
      const a = first ? await slice(without, sliceMs) : undefined;
      const b = await slice(withInspector, sliceMs);
      const c = a ?? (await slice(without, sliceMs));
      rates.without.push(c.cpu);
      rates.with.push(b.cpu);
      ratios.push(c.cpu / b.cpu);
      wallRatios.push(c.wall / b.wall);
      withRuns += b.runs;
    }
    results.push({
      scenario: s.name,
      runsPerCpuSecondWithout: Math.round(median(rates.without)),
      runsPerCpuSecondWith: Math.round(median(rates.with)),
      ratio: Number(median(ratios).toFixed(3)),
      wallClockRatio: Number(median(wallRatios).toFixed(3)),
      eventsPerRun: Math.round(events / withRuns),
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
