import { allStates } from '@baton/engine/testing';
import { describe, expect, it } from 'vitest';
import { deployProduction } from '../examples/approvals/index.js';
import { runCli } from './helpers/mcpClients.js';

describe('baton diagram', () => {
  it('prints the flow as Mermaid with every state and the asking states marked', async () => {
    const { code, stdout, stderr } = await runCli(['diagram', 'examples/approvals', 'deploy_production']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.startsWith('stateDiagram-v2\n')).toBe(true);
    for (const id of allStates(deployProduction)) expect(stdout).toContain(id.split('.').pop()!);
    expect(stdout).toContain('note right of awaitingApproval : asks confirm_deploy (form), change_ticket (form)');
    expect(stdout).toContain('awaitingApproval --> expired : after 15 min');
  });

  it('draws a timer that acts in place (the reminder: after with actions, no target) as a loop on its state', async () => {
    const { code, stdout } = await runCli(['diagram', 'examples/approvals', 'expense_approval']);
    expect(code).toBe(0);
    expect(stdout).toContain('deciding__manager --> deciding__manager : after 24 h (in place)');
  });

  it('fails with one line for an unknown flow or missing arguments', async () => {
    const unknown = await runCli(['diagram', 'examples/approvals', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknown.stderr).toContain('no flow "nope"');
    const missing = await runCli(['diagram']);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
  });
});
