/**
 * Micro-benchmark of the requestState codec: mint and open throughput and token
 * sizes for a ~300-byte body, in sealed and signed mode, with and without
 * compression. Informational only (not a test): `pnpm tsx scripts/bench-codec.ts`.
 */
import { createRequestStateCodec, generateKey, type StateBinding } from '../packages/engine/src/codec/index.js';

const binding: StateBinding = {
  principal: 'user:alice@example.com',
  flow: 'book_flight',
  method: 'tools/call',
  target: 'book_flight',
  args: { from: 'CDG', to: 'SFO', date: '2026-03-14', passengers: [{ name: 'Alice', age: 34 }] },
};
const body = {
  value: 'awaitingSeat',
  context: { from: 'CDG', to: 'SFO', date: '2026-03-14', fare: 1234.5, currency: 'EUR', quoteId: 'q_8c1f2e9a' },
  timers: [{ id: 'holdExpires', at: Date.now() + 600_000 }],
  answers: { confirm: { action: 'accept', content: { ok: true } } },
  note: 'hold seats 14A and 14B until the passenger confirms the fare',
};
const claims = {
  fid: 'q7Hk2mQ1v0Zl9XyJc4Rt8w',
  hash: 'LG7iB6BYRTlHWl9YbLGdwQ',
  round: 2,
  body,
};

/** Operations per second of `fn`, after a warm-up, over about `ms` milliseconds. */
function opsPerSecond(fn: () => void, ms = 1000): number {
  for (let i = 0; i < 2000; i++) fn();
  let count = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (let i = 0; i < 200; i++) fn();
    count += 200;
  }
  return Math.round((count * 1000) / (performance.now() - start));
}

const keys = [generateKey(), generateKey()];
console.log(`body: ${JSON.stringify(body).length} bytes of JSON; Node ${process.version}`);
for (const mode of ['sealed', 'signed'] as const) {
  for (const compressThresholdBytes of [256, Number.POSITIVE_INFINITY]) {
    const codec = createRequestStateCodec({ keys, mode, compressThresholdBytes });
    const { token } = codec.mint(binding, claims);
    const mint = opsPerSecond(() => codec.mint(binding, claims));
    const open = opsPerSecond(() => codec.open(token, binding));
    const label = `${mode}, ${compressThresholdBytes === 256 ? 'deflate ≥256 B' : 'no deflate'}`.padEnd(24);
    console.log(`${label} token ${String(token.length).padStart(4)} chars  mint ${mint} ops/s  open ${open} ops/s`);
  }
}
