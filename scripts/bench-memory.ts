/**
 * Memory benchmark (not a test): start `deploy_production` flows (first round
 * only: plan computed, both answers asked, a sealed requestState handed out)
 * against an in-process runner and abandon them. After every 10,000 flows the
 * heap is measured after a forced GC. Nothing is held per flow in flight, so
 * the heap must stay flat: reports first vs last and the least-squares slope
 * (bytes per flow), and writes bench/reports/memory.json.
 *
 * Run: `pnpm tsx scripts/bench-memory.ts [flows] [every]` (default 100000 and 10000;
 * or BENCH_MEMORY_FLOWS / BENCH_MEMORY_EVERY). Re-executes itself with
 * `--expose-gc` when `gc` is not exposed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallContext, createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
import { deployProduction } from '../examples/approvals/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const gc = (globalThis as { gc?: () => void }).gc;

if (!gc) {
  const child = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: 'inherit', cwd: ROOT },
  );
  process.exit(child.status ?? 1);
}

const flows = Number(process.argv[2] ?? process.env.BENCH_MEMORY_FLOWS ?? 100_000);
const every = Number(process.argv[3] ?? process.env.BENCH_MEMORY_EVERY ?? 10_000);

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage().heapUsed;
}

async function main() {
  const runner = createRunner({
    flows: [deployProduction],
    codec: createRequestStateCodec({ keys: [generateKey()] }),
  });
  const context: CallContext = { principal: 'bench', method: 'tools/call', target: deployProduction.name };
  let stateBytes = 0;
  const startFlow = async (i: number) => {
    const outcome = await runner.run({ flow: deployProduction.name, args: { version: `1.${i}.0` }, context });
    if (outcome.type !== 'input_required') throw new Error(`unexpected ${outcome.type}`);
    stateBytes = outcome.requestState.length; // the state is handed out and abandoned
  };

  // Warm-up (JIT, module caches), then the baseline sample.
  for (let i = 0; i < 2000; i++) await startFlow(i);
  const samples: { flows: number; heapUsedBytes: number; rssBytes: number }[] = [
    { flows: 0, heapUsedBytes: heapAfterGc(), rssBytes: process.memoryUsage().rss },
  ];
  const started = performance.now();
  for (let i = 1; i <= flows; i++) {
    await startFlow(i);
    if (i % every === 0) {
      samples.push({ flows: i, heapUsedBytes: heapAfterGc(), rssBytes: process.memoryUsage().rss });
      const last = samples.at(-1)!;
      console.log(`${String(i).padStart(7)} flows: heapUsed ${(last.heapUsedBytes / 2 ** 20).toFixed(2)} MiB`);
    }
  }
  const seconds = (performance.now() - started) / 1000;

  // Least-squares slope of heapUsed against flows started: over every sample, and
  // without the first one (taken right after the warm-up).
  const slopeOf = (points: typeof samples) => {
    const n = points.length;
    const mx = points.reduce((a, s) => a + s.flows, 0) / n;
    const my = points.reduce((a, s) => a + s.heapUsedBytes, 0) / n;
    return (
      points.reduce((a, s) => a + (s.flows - mx) * (s.heapUsedBytes - my), 0) /
      points.reduce((a, s) => a + (s.flows - mx) ** 2, 0)
    );
  };
  const slope = slopeOf(samples);
  const tailSlope = samples.length > 2 ? slopeOf(samples.slice(1)) : slope;
  const first = samples[0]!.heapUsedBytes;
  const last = samples.at(-1)!.heapUsedBytes;
  const summary = {
    flows,
    every,
    seconds: Number(seconds.toFixed(1)),
    flowsPerSecond: Math.round(flows / seconds),
    requestStateBytes: stateBytes,
    firstHeapMiB: Number((first / 2 ** 20).toFixed(2)),
    lastHeapMiB: Number((last / 2 ** 20).toFixed(2)),
    deltaKiB: Number(((last - first) / 1024).toFixed(1)),
    slopeBytesPerFlow: Number(slope.toFixed(3)),
    slopeAfterFirstSampleBytesPerFlow: Number(tailSlope.toFixed(3)),
    // Flat: under 1 byte per abandoned flow either way (one leaked small object per flow is >= ~50 bytes).
    flat: Math.max(slope, tailSlope) < 1,
  };
  console.table([summary]);
  mkdirSync(join(ROOT, 'bench/reports'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/reports/memory.json'),
    JSON.stringify(
      {
        node: process.version,
        date: new Date().toISOString(),
        flow: 'deploy_production, first round only, in-process runner (no ledger), states abandoned',
        summary,
        samples,
      },
      null,
      2,
    ),
  );
  console.log('wrote bench/reports/memory.json');
}

await main();
