/**
 * Inspector benchmark (not a test): what an attached inspector costs a flow.
 * Complete runs of deploy_production (two rounds: start, then both answers;
 * and three rounds, one answer each) through three runners in the same
 * process: one without an inspector (the baseline), one with a no-op
 * inspector, and a control without one (a second baseline: its ratios are
 * the noise of the measurement). They take turns run by run (rotating which
 * goes first), so all three see the same load on a shared machine. Prints,
 * per scenario, the ratio of the median run times (with / without: 1.10
 * means the inspector costs a flow 10%; a median leaves out the runs another
 * process preempted), the ratio of the CPU time spent in all (GC included,
 * sampled at the scheduler's tick, so only the total means anything), and
 * the control's, and writes bench/reports/inspect.json.
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fixed = (n: number) => Number(n.toFixed(3));

async function main() {
  let events = 0;
  const noop: Inspector = () => {
    events++;
  };
  const results = [];
  for (const s of scenarios) {
    const sides = {
      without: complete(runnerWith(undefined), s),
      with: complete(runnerWith(noop), s),
      control: complete(runnerWith(undefined), s),
    };
    const names = Object.keys(sides) as (keyof typeof sides)[];
    // Warm up until every side is optimised (a short warm-up favours whichever scenario runs second).
    const warm = performance.now() + 1500;
    while (performance.now() < warm) for (const name of names) await sides[name]();
    events = 0;
    const times = { without: [] as number[], with: [] as number[], control: [] as number[] };
    const cpu = { without: 0, with: 0, control: 0 };
    const end = performance.now() + seconds * 1000;
    for (let turn = 0; performance.now() < end; turn++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(turn + j) % names.length]!;
        const usage = process.cpuUsage();
        const start = performance.now();
        await sides[name]();
        times[name].push(performance.now() - start);
        const used = process.cpuUsage(usage);
        cpu[name] += used.user + used.system;
      }
    }
    const runs = times.with.length;
    results.push({
      scenario: s.name,
      runs,
      medianMsWithout: fixed(median(times.without)),
      medianMsWith: fixed(median(times.with)),
      ratio: fixed(median(times.with) / median(times.without)),
      cpuRatio: fixed(cpu.with / cpu.without),
      controlRatio: fixed(median(times.control) / median(times.without)),
      controlCpuRatio: fixed(cpu.control / cpu.without),
      eventsPerRun: Math.round(events / runs),
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
