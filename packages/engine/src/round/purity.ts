/**
 * Which rounds of a flow can have no side effect of their own, read off the
 * machine's definition once per state: a round that presents a state in such
 * a state is played FIRST and then redeemed together with its outcome in one
 * ledger write (`singleUse.ts`, `LedgerRedemptions.redeemWithOutcome`), where
 * every other round is redeemed before it plays and its outcome recorded
 * after, two writes. A state qualifies when nothing the machine can reach from
 * it, whatever events arrive and whichever guards pass, runs anything but
 * pure built-in actions: no invoked or spawned actor (durable steps are
 * invoked actors), no custom action (XState's actions are effects), no
 * `sendTo`, `enqueueActions` or `spawnChild`, and no `assign` that may spawn
 * (one whose code does not show it cannot: `cannotSpawn`). Pure built-ins are `assign`, `raise`, `cancel`, `emit`
 * (which only Baton listens to: `notify()`, `progress()`) and `log`. Guards,
 * delays, outputs and context factories are pure by XState's contract. The
 * analysis over-approximates what a round enters (a target's descendants,
 * every state a history node may restore), so it can only say "not pure" too
 * often, never the other way. Whatever reaches the ledger during a round
 * redeems it first anyway (`singleUse.ts` gates the round's ledger).
 */
import type { AnyStateMachine, AnyStateNode, StateValue } from 'xstate';

/** XState's built-in actions that do nothing outside the machine. */
const PURE_BUILTINS: ReadonlySet<string> = new Set([
  'xstate.assign',
  'xstate.raise',
  'xstate.cancel',
  'xstate.emit',
  'xstate.log',
]);

/** Distinct state values remembered per machine (a machine has few; the bound keeps memory flat whatever). */
const MAX_REMEMBERED = 512;

/** The purity of each state value, per machine, computed on first use. */
const purities = new WeakMap<AnyStateMachine, Map<string, boolean>>();

/**
 * Whether a round starting in `value` (a restored snapshot's state value) can have no side
 * effect of its own: see the module comment. `false` for a value the machine does not have.
 */
export function isPureFrom(machine: AnyStateMachine, value: StateValue): boolean {
  let known = purities.get(machine);
  if (!known) {
    known = new Map();
    purities.set(machine, known);
  }
  const key = typeof value === 'string' ? value : JSON.stringify(value);
  let pure = known.get(key);
  if (pure === undefined) {
    const active = activeNodes(machine.root, value, []);
    pure = active !== undefined && pureRegion(machine, active);
    if (known.size < MAX_REMEMBERED) known.set(key, pure);
  }
  return pure;
}

/** The state nodes `value` names under `node` (leaves and the compound nodes on the way), or `undefined`. */
function activeNodes(node: AnyStateNode, value: StateValue, into: AnyStateNode[]): AnyStateNode[] | undefined {
  if (typeof value === 'string') {
    const child = node.states[value];
    // A value ends at atomic states; one that stops at a compound state is not a machine's.
    if (!child || Object.keys(child.states).length > 0) return undefined;
    into.push(child);
    return into;
  }
  for (const key of Object.keys(value)) {
    const child = node.states[key];
    if (!child) return undefined;
    into.push(child);
    if (activeNodes(child, value[key]!, into) === undefined) return undefined;
  }
  return into;
}

/** Whether nothing reachable from the `active` nodes runs an effect. */
function pureRegion(machine: AnyStateMachine, active: readonly AnyStateNode[]): boolean {
  const seen = new Set<AnyStateNode>();
  const queue: AnyStateNode[] = [];
  const add = (node: AnyStateNode) => {
    if (seen.has(node)) return;
    seen.add(node);
    queue.push(node);
  };
  const withAncestors = (node: AnyStateNode) => {
    for (let at: AnyStateNode | undefined = node; at; at = at.parent) add(at);
  };
  const entered = (target: AnyStateNode) => {
    // A history node restores any state below its parent: all of them count as entered.
    const from = target.type === 'history' && target.parent ? target.parent : target;
    withAncestors(from);
    const below = [from];
    while (below.length > 0) {
      for (const child of Object.values(below.pop()!.states)) {
        add(child);
        below.push(child);
      }
    }
  };
  for (const node of active) withAncestors(node);
  while (queue.length > 0) {
    const node = queue.pop()!;
    if (node.invoke.length > 0) return false;
    if (!node.entry.every((a) => pureAction(machine, a)) || !node.exit.every((a) => pureAction(machine, a))) {
      return false;
    }
    // An initial transition's target is a child, entered (above) when its parent is; only its
    // actions are read (and also for active parents, which will not take it: over-approximated).
    if (node.initial && !node.initial.actions.every((a) => pureAction(machine, a))) return false;
    const transitions = [...node.transitions.values()].flat();
    if (node.always) transitions.push(...node.always);
    for (const transition of transitions) {
      if (!transition.actions.every((a) => pureAction(machine, a))) return false;
      for (const target of transition.target ?? []) entered(target);
    }
  }
  return true;
}

/** An action as a state node holds it: a built-in or inline function, a name, or `{ type, params }`. */
type HeldAction = unknown;

/** Whether `action` is a pure built-in (a named one through the machine's implementations). */
function pureAction(machine: AnyStateMachine, action: HeldAction, depth = 0): boolean {
  if (typeof action === 'function') {
    const type = (action as { type?: unknown }).type;
    if (typeof type !== 'string' || !PURE_BUILTINS.has(type)) return false;
    return type !== 'xstate.assign' || !maySpawn((action as { assignment?: unknown }).assignment);
  }
  const name = typeof action === 'string' ? action : (action as { type?: unknown } | null)?.type;
  if (typeof name !== 'string' || depth > 8) return false;
  const implementation = (machine.implementations.actions as Record<string, unknown>)[name];
  return implementation !== undefined && pureAction(machine, implementation, depth + 1);
}

/**
 * Whether an `assign` assignment (a function, or an object of values and functions) may spawn: a
 * function may unless its source shows it cannot reach XState's `spawn` (see {@link cannotSpawn}).
 */
function maySpawn(assignment: unknown): boolean {
  if (typeof assignment === 'function') return !cannotSpawn(Function.prototype.toString.call(assignment));
  if (assignment && typeof assignment === 'object') return Object.values(assignment).some(maySpawn);
  return false;
}

/**
 * Whether an assigner's source shows it cannot reach `spawn`, which XState passes in its first
 * argument: it never says `spawn` or `arguments`, and it takes no argument or destructures the
 * first one into named properties (no rest element, no nesting). `({ context }) => …` cannot;
 * `(args) => helper(args)` might, and so might anything this cannot read.
 */
export function cannotSpawn(source: string): boolean {
  if (/\b(?:spawn|arguments)\b/.test(source)) return false;
  const params = firstParameters(source);
  if (params === undefined) return false;
  const first = params.trim();
  if (first === '') return true;
  return /^\{[^{}()[\]=.]*\}\s*(?:,|$)/.test(first);
}

/** The text of a function's parameter list (arrow, `function` or method), or `undefined`. */
function firstParameters(source: string): string | undefined {
  const text = source.replace(/^async\s+/, '');
  const open = text.indexOf('(');
  // `x => …` (a bare parameter), or a function whose text does not begin with its parameters.
  if (open < 0 || !/^(?:function\b[^(]*|[\w$]*\s*)$/.test(text.slice(0, open))) return undefined;
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return text.slice(open + 1, i);
  }
  return undefined;
}
