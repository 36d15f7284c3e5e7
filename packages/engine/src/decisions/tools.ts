/**
 * The decision tools assembled on a runner's port (`port.ts`): `inbox`,
 * `decide`, `requests`, `resume` and `withdraw` (their types and contracts
 * are in `types.ts`). Deciding is `decide.ts`; the other tools are
 * `requestTools.ts`.
 */
import { decide } from './decide.js';
import type { DecisionsPort } from './port.js';
import { inbox, requests, resume, withdraw } from './requestTools.js';
import type { DecisionTools, ResumeServer } from './types.js';

/** Build the decision tools on a runner's core. */
export function createDecisionTools(core: DecisionsPort, server: ResumeServer): DecisionTools {
  return {
    inbox: (context) => inbox(core, context),
    decide: (request) => decide(core, request),
    requests: (context) => requests(core, context),
    resume: (request) => resume(core, server, request),
    withdraw: (request) => withdraw(core, request),
  };
}
