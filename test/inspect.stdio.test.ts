/**
 * `baton serve --stdio --inspect MODULE` with an inspector module that prints
 * to stdout on load and on every event: every line on stdout is still
 * JSON-RPC, and what the module printed went to stderr.
 */
import { spawn } from 'node:child_process';
import { generateKey } from '@baton/engine';
import { expect, it } from 'vitest';
import { cliArgs, jsonRpcLines, ROOT } from './helpers/mcpClients.js';

it('an inspector that logs to stdout does not corrupt --stdio serving', async () => {
  const child = spawn(
    process.execPath,
    cliArgs(['serve', 'examples/approvals', '--stdio', '--inspect', 'test/fixtures/inspector/noisy.ts']),
    { cwd: ROOT, env: { ...process.env, BATON_KEYS: generateKey() }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  try {
    const answered = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within 60 s; stdout:\n${stdout}\n${stderr}`)), 60_000);
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        // The round's result (id 3) or, through the legacy shim, its elicitation request.
        if (/"id":3[,}]|elicitation\/create/.test(stdout)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with ${code}:\n${stderr}`));
      });
    });
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { elicitation: { form: {} } },
        clientInfo: { name: 'noisy-check', version: '1.0.0' },
      },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'deploy_production', arguments: { version: '1.0.0' } },
    });
    await answered;
  } finally {
    child.stdin.end();
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    clearTimeout(killer);
  }
  expect(jsonRpcLines(stdout).length).toBeGreaterThanOrEqual(2);
  // The module did print, on stderr.
  expect(stderr).toContain('noisy inspector loaded');
  expect(stderr).toContain('noisy inspector event @xstate.snapshot');
  expect(stderr).toContain('noisy write @xstate.event');
  expect(stderr).toContain('noisy debug');
}, 90_000);
