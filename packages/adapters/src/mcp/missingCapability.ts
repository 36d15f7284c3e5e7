/**
 * A flow that needs an input kind the client did not declare, on the
 * 2026-07-28 wire: the engine ends the round in an error outcome marked
 * `undeclared` (no fallback for that input), and SEP-2575 says a server that
 * needs a client capability the request did not declare answers JSON-RPC
 * `-32021` (MissingRequiredClientCapabilityError) with HTTP 400, naming what
 * is missing as a `ClientCapabilities` object. 2025-era connections keep the
 * tool error result (`isError`, "... which the client did not declare"): their
 * revision has no such error.
 */
import type { InputKind, RoundOutcome } from '@baton/engine';
import { type ClientCapabilities, MissingRequiredClientCapabilityError } from '@modelcontextprotocol/server';

/** The client capability an input kind needs, as `ClientCapabilities` (`url` -> `{ elicitation: { url: {} } }`). */
export function capabilityForKind(kind: InputKind): ClientCapabilities {
  switch (kind) {
    case 'form':
      return { elicitation: { form: {} } };
    case 'url':
      return { elicitation: { url: {} } };
    case 'sampling':
      return { sampling: {} };
    case 'roots':
      return { roots: {} };
  }
}

/**
 * The `-32021` error for an outcome that failed on an undeclared input kind, when the request
 * came with a 2026-07-28 `_meta` envelope; `undefined` for every other outcome.
 *
 * Wire: `{ code: -32021, message: 'This tool needs sampling input ("q"), which …',
 * data: { requiredCapabilities: { sampling: {} } } }` (HTTP 400).
 */
export function missingCapabilityError(
  outcome: RoundOutcome,
  modern: boolean,
): MissingRequiredClientCapabilityError | undefined {
  if (!modern || outcome.type !== 'error' || !outcome.undeclared) return undefined;
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: capabilityForKind(outcome.undeclared.kind) },
    outcome.message,
  );
}
