/**
 * `@baton/engine/testing`: the flow test kit. Drive flows round by round
 * without a transport, move the clock, and check state coverage.
 */
export { allStates, type FlowPath, type FlowPathOptions, flowPaths, statesIn, unvisitedStates } from './coverage.js';
export {
  accept,
  cancel,
  createFlowTester,
  decline,
  type FlowRun,
  type FlowTester,
  type FlowTesterOptions,
  type TestClock,
} from './flowTester.js';
