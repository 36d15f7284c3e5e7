/**
 * How the decision tools reach a parked request and say no: a request found
 * by a client-given id, its flow and its opened blob migrated to the current
 * definition (or a refusal saying why not: no ledger, a bad or unknown id, a
 * flow this server does not serve, a blob that does not open), whether a
 * caller may make a given decision on it, and the refusal itself (an `error`
 * outcome, a tool error, whose message is a sentence). Shared by deciding
 * (`decide.ts`) and the requester's tools (`requestTools.ts`).
 */

import type { Flow } from '../authoring/flowTypes.js';
import type { DecisionSpec } from '../authoring/inputs/decision.js';
import type { ParkedRequest } from '../contract/ledger.js';
import type { ErrorOutcome } from '../contract/outcome.js';
import { UnknownKeyError, unknownKeySentence } from '../errors.js';
import { openParked, type ParkedBlob, unknownParkedKeyId } from './parked.js';
import { currentBody } from './playParked.js';
import type { DecisionsPort } from './port.js';
import type { DecisionCaller } from './types.js';

const ID = /^[A-Za-z0-9_-]{22}$/;

/** A refusal: an error outcome (a tool error) with a sentence. */
export function refuse(tool: string, message: string, row?: Pick<ParkedRequest, 'id' | 'flow'>): ErrorOutcome {
  return { type: 'error', flow: row?.flow ?? tool, fid: row?.id ?? '', round: 0, message };
}

/**
 * A request by a client-given id, its flow and its opened blob; or why not, as a refusal with its
 * reason code (`unknown`: no such request; `unavailable`: this server cannot serve it).
 */
export async function load(core: DecisionsPort, tool: string, id: unknown) {
  const { codec, log } = core;
  const ledger = core.ledger;
  if (!ledger) {
    return {
      refusal: refuse(tool, 'This server keeps no requests: it runs without a ledger (baton serve --ledger URL).'),
      reason: 'unavailable' as const,
    };
  }
  if (typeof id !== 'string' || !ID.test(id)) {
    return { refusal: refuse(tool, 'There is no request with that id.'), reason: 'unknown' as const };
  }
  const row = await ledger.requests.getRequest(id);
  if (!row) return { refusal: refuse(tool, `There is no request ${id}.`), reason: 'unknown' as const };
  const flow = core.flows.get(row.flow);
  if (!flow)
    return {
      refusal: refuse(tool, `Request ${id} belongs to "${row.flow}", which this server does not serve.`, row),
      reason: 'unavailable' as const,
    };
  const blob = openParked(codec, row);
  const body = blob && currentBody(flow, blob);
  const keyId = blob ? undefined : unknownParkedKeyId(codec, row);
  if (keyId) {
    const key = unknownKeySentence(keyId);
    log({ type: 'flow_error', flow: flow.name, fid: id, error: new UnknownKeyError(keyId) });
    return { refusal: refuse(tool, `Request ${id} was ${key}.`, row), reason: 'unavailable' as const, unknownKey: key };
  }
  if (!blob || !body) {
    log({
      type: 'flow_error',
      flow: flow.name,
      fid: id,
      error: new Error('the parked request does not open or cannot be migrated'),
    });
    return {
      refusal: refuse(tool, `Request ${id} cannot be read on this server. The server log has details.`, row),
      reason: 'unavailable' as const,
    };
  }
  return { ledger, row, flow, blob: { ...blob, s: body } as ParkedBlob };
}

/** Whether `caller` may make `key` on this request, or why not. */
export function allowed(flow: Flow, blob: ParkedBlob, key: string, caller: DecisionCaller): true | string {
  const spec = flow.inputs[key] as DecisionSpec;
  const ok = spec.mayDecide({ context: blob.s.s[1], principal: caller.principal, roles: caller.roles ?? [] });
  if (ok) return true;
  return spec.role !== undefined && !(caller.roles ?? []).includes(spec.role)
    ? `it needs the role "${spec.role}"`
    : 'the flow does not allow you to make it';
}
