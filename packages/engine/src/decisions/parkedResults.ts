/**
 * What a parked flow instance's rounds say, in words: the complete "waiting"
 * result naming who must decide, the "working" result of durable steps that
 * outlive a call, a parked instance's final outcome as this round's answer,
 * and the error outcomes of a parked request this server cannot read or
 * continue (logged with the detail, answered without it). The write-back
 * (`playParked.ts`) and the requester's hold-and-poll round
 * (`requesterRound.ts`) decide when; this module only words the answer.
 */

import type { Flow } from '../authoring/flowTypes.js';
import type { ParkedRequest, RequestStatus } from '../contract/ledger.js';
import type { CompleteOutcome, ErrorOutcome, FlowResult } from '../contract/outcome.js';
import { UnknownKeyError, unknownKeySentence } from '../errors.js';
import { type FinalOutcome, type ParkedBlob, unknownParkedKeyId } from './parked.js';
import type { DecisionsPort } from './port.js';

/** Who decides what a waiting request waits for, in words. */
export function describeWaiting(waitingFor: readonly { key: string; role?: string; event?: string }[]): string {
  const parts = waitingFor.map(({ key, role, event }) =>
    event !== undefined
      ? `the event "${event}" (${key})`
      : role === undefined
        ? `a decision (${key})`
        : `a decision by someone with the role "${role}" (${key})`,
  );
  return parts.join(' and ');
}

/** The complete result of a call whose wait ran out: who must decide, and how to continue. */
export function waitingResult(
  id: string,
  waitingFor: readonly { key: string; role?: string; event?: string }[],
): FlowResult {
  const resume = `Continue later with baton_resume ${JSON.stringify({ id })}.`;
  const text =
    waitingFor.length > 0
      ? `Waiting for ${describeWaiting(waitingFor)} on request ${id}. ${resume}`
      : `Request ${id} is waiting for you. ${resume}`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: { status: 'waiting', id, waitingFor: waitingFor.map((w) => ({ ...w })) },
  };
}

/** The complete result of a call whose wait ran out while durable steps still run. */
export function workingResult(id: string, steps: readonly string[]): FlowResult {
  const names = [...new Set(steps.map((key) => key.replace(/#\d+$/, '')))];
  const what = names.length > 0 ? ` (${names.join(', ')})` : '';
  return {
    content: [
      {
        type: 'text',
        text: `Still working on request ${id}${what}. Continue later with baton_resume ${JSON.stringify({ id })}.`,
      },
    ],
    structuredContent: { status: 'working', id, steps: names },
  };
}

/** A parked instance's final outcome as this round's outcome. */
export function finalOutcome(
  blob: ParkedBlob,
  base: { flow: string; fid: string; round: number },
  status: RequestStatus,
) {
  const final: FinalOutcome = blob.o ?? {
    type: 'error',
    message: `Request ${base.fid} has ended (${status}).`,
  };
  return { ...final, ...base } as CompleteOutcome | ErrorOutcome;
}

/** A parked request that does not open here (rotated key, altered row): logged, answered in words. */
export function unreadable(
  core: DecisionsPort,
  flow: Flow,
  base: { flow: string; fid: string; round: number },
  row: ParkedRequest,
): ErrorOutcome {
  const keyId = unknownParkedKeyId(core.codec, row);
  if (keyId) {
    const key = unknownKeySentence(keyId);
    core.log({ type: 'flow_error', flow: flow.name, fid: base.fid, error: new UnknownKeyError(keyId) });
    return { type: 'error', ...base, message: `Request ${base.fid} was ${key}.` };
  }
  core.log({
    type: 'flow_error',
    flow: flow.name,
    fid: base.fid,
    error: new Error('the parked request does not open: the ledger was altered, or its key left the ring'),
  });
  return {
    type: 'error',
    ...base,
    message: `Request ${base.fid} cannot be read on this server. The server log has details.`,
  };
}

/** A parked request of an older definition with no migration: logged, answered in words. */
export function stale(
  core: DecisionsPort,
  flow: Flow,
  base: { flow: string; fid: string; round: number },
): ErrorOutcome {
  core.log({
    type: 'flow_error',
    flow: flow.name,
    fid: base.fid,
    error: new Error(`request parked by another definition of ${flow.name}; register a migration for it`),
  });
  return {
    type: 'error',
    ...base,
    message: `Request ${base.fid} was parked by an earlier version of "${flow.name}" that this server cannot continue.`,
  };
}
