/**
 * Tests of `publish_release` with Baton's test kit (`npm test`: Node's test
 * runner, TypeScript through tsx). Each `answer()` is a real round through
 * the real runner and requestState codec, as an MCP client would drive it,
 * without a server. The last test checks that the tests together reached
 * every state of the flow.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accept, cancel, createFlowTester, decline, unvisitedStates } from '@baton/engine/testing';
import { publishRelease } from './flows.js';

const tester = createFlowTester(publishRelease);

test('asks for a confirmation, then a note, and publishes', async () => {
  const run = await tester.start({ version: '1.2.3' });
  assert.equal(run.status, 'input_required');
  assert.deepEqual(run.asked, ['confirm']);
  const { params } = run.request('confirm');
  assert.equal(params && 'message' in params ? params.message : undefined, 'Publish release 1.2.3?');

  await run.answer({ confirm: accept({ confirm: true }) });
  assert.deepEqual(run.asked, ['note']);

  await run.answer({ note: accept({ note: 'Faster builds.' }) });
  assert.equal(run.status, 'complete');
  assert.equal(run.text, 'Published 1.2.3: Faster builds.');
});

test('declining the confirmation cancels the release', async () => {
  const run = await tester.start({ version: '1.2.3' });
  await run.answer({ confirm: decline() });
  assert.equal(run.status, 'complete');
  assert.equal(run.text, 'Release 1.2.3 cancelled; nothing was published.');
});

test('answering "no" cancels too', async () => {
  const run = await tester.start({ version: '1.2.3' });
  await run.answer({ confirm: accept({ confirm: false }) });
  assert.equal(run.text, 'Release 1.2.3 cancelled; nothing was published.');
});

test('an empty note is asked again; cancelling it cancels the release', async () => {
  const run = await tester.start({ version: '2.0.0' });
  await run.answer({ confirm: accept({ confirm: true }) });
  await run.answer({ note: accept({ note: '' }) });
  assert.deepEqual(run.asked, ['note']);
  await run.answer({ note: cancel() });
  assert.equal(run.text, 'Release 2.0.0 cancelled; nothing was published.');
});

test('invalid arguments are an error', async () => {
  const run = await tester.start({ version: '' });
  assert.equal(run.status, 'error');
});

test('the tests above reach every state of the flow', () => {
  assert.deepEqual(unvisitedStates(publishRelease, tester.visited), []);
});
