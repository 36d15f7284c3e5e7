/**
 * `@baton/engine/testing`: the flow test kit. Drive flows round by round
 * without a transport, move the clock, and check state coverage.
 */
export { allStates, type FlowPath, type FlowPathOptions, flowPaths, statesIn, unvisitedStates } from './coverage.js';
export {
  accept,
  type CallerKeys,
  cancel,
  createFlowTester,
  type Decider,
  type DecisionContentOf,
  type DecisionKeys,
  decline,
  type FlowRun,
  type FlowTester,
  type FlowTesterOptions,
  type StepStubs,
  type TestAnswers,
  type TestClock,
  type TestNotification,
  type WireAnswerOf,
} from './flowTester.js';
