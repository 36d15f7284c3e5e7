import { assign, createActor, setup } from 'xstate';

const m = setup({}).createMachine({
  id: 'x',
  context: { a: 1, b: 'x' },
  initial: 'a',
  states: {
    a: { on: { go: { target: 'b', actions: assign({ a: 2 }) } } },
    b: { always: 'c' },
    c: { on: { go: 'd' } },
    d: { type: 'final' },
  },
});
const noop = { next(_e: unknown) {} };
const run = (a: any) => {
  a.start();
  a.send({ type: 'go' });
  a.send({ type: 'go' });
  a.stop();
};
const variants: Record<string, () => void> = {
  without: () => run(createActor(m)),
  ctorOnly: () => {
    const a = createActor(m, { inspect: noop });
    (a.system as any)._sendInspectionEvent = () => {};
    run(a);
  },
  patchedNoWrite: () => {
    const a = createActor(m, { inspect: noop });
    (a.system as any)._sendInspectionEvent = (e: any) => {
      noop.next(e);
    };
    run(a);
  },
  patched: () => {
    const a = createActor(m, { inspect: noop });
    const root = a.sessionId;
    (a.system as any)._sendInspectionEvent = (e: any) => {
      e.rootId = root;
      noop.next(e);
    };
    run(a);
  },
  noInspectPatched: () => {
    const a = createActor(m);
    (a.system as any)._sendInspectionEvent = (e: any) => {
      noop.next(e);
    };
    run(a);
  },
};
function slice(fn: () => void, ms: number) {
  let n = 0;
  const c = process.cpuUsage();
  const s = performance.now();
  while (performance.now() < s + ms) {
    for (let i = 0; i < 20; i++) fn();
    n += 20;
  }
  const u = process.cpuUsage(c);
  return n / ((u.user + u.system) / 1e6);
}
for (const f of Object.values(variants)) for (let i = 0; i < 3000; i++) f();
const names = Object.keys(variants);
const rates: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
for (let i = 0; i < 60; i++)
  for (const n of names.map((_, j) => names[(i + j) % names.length]!)) rates[n]!.push(slice(variants[n]!, 30));
const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
for (const n of names)
  console.log(n.padEnd(16), Math.round(med(rates[n]!)), (med(rates.without!) / med(rates[n]!)).toFixed(3));
