/**
 * The decision tools assembled on a runner's port (`port.ts`): `inbox`,
 * `decide`, `describeDecision`, `answerDecision`, `delegate` (`handOver.ts`), `requests`, `runStatus`
 * (`runStatus.ts`), `resume` and `withdraw` (their types and contracts are in `types.ts`). Deciding is
 * `decide.ts` (two MRTR rounds) and `answer.ts` (one shot), both on
 * `deciding.ts`; the other tools are `requestTools.ts`.
 */
import { answerDecision, describeDecision } from './answer.js';
import { decide } from './decide.js';
import { delegateDecision } from './handOver.js';
import type { DecisionsPort } from './port.js';
import { inbox, requests, resume, withdraw } from './requestTools.js';
import { runStatus } from './runStatus.js';
import type { DecisionTools, ResumeServer } from './types.js';

/** Build the decision tools on a runner's core. */
export function createDecisionTools(core: DecisionsPort, server: ResumeServer): DecisionTools {
  return {
    inbox: (context) => inbox(core, context),
    decide: (request) => decide(core, request),
    describeDecision: (request) => describeDecision(core, request),
    answerDecision: (request) => answerDecision(core, request),
    delegate: (request) => delegateDecision(core, request),
    requests: (context) => requests(core, context),
    runStatus: (request) => runStatus(core, request),
    resume: (request) => resume(core, server, request),
    withdraw: (request) => withdraw(core, request),
  };
}
