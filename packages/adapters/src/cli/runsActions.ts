/**
 * `baton runs cancel|terminate|retry-step`: what an operator does to a stuck
 * run, on the ledger the servers share. `cancel <id> <flows-module>` delivers the flow's
 * withdrawal (as `baton_withdraw` does for the requester); a flow with no
 * withdrawal path where it stands refuses, and nothing changes.
 * `terminate <id>` ends the run whatever its flow says (status
 * `terminated`), without running the flow. `retry-step <id> <step>` runs a
 * durable step again after its retries ran out (the run must be waiting on
 * it; a server's scheduler plays the round that runs it). Each is one compare-and-set write
 * of the run: of two racing writes exactly one wins, and the loser says what
 * won. The operator (`--as NAME`, else the login name) and `--reason` are
 * recorded in the audit trail (`via: 'operator'`), the operator as a keyed
 * hash unless `--store-principal-names`. Needs the servers' `BATON_KEYS`:
 * a run's state is sealed.
 */
import { userInfo } from 'node:os';
import {
  createRequestStateCodec,
  createRunner,
  type Flow,
  type FullLedger,
  parseKeyRingEnv,
  type RoundOutcome,
} from '@baton/engine';
import { openAuditLog } from '@baton/store';
import { loadFlowsModule } from '../flowsModule.js';
import { CliError, oneLine, usageError } from './cliError.js';

/** The synopses of the three actions. */
export const CANCEL_USAGE =
  'baton runs cancel <id> <flows-module> --ledger URL --reason TEXT [--as NAME] [--store-principal-names]';
export const TERMINATE_USAGE =
  'baton runs terminate <id> --ledger URL --reason TEXT [--as NAME] [--store-principal-names]';
export const RETRY_STEP_USAGE =
  'baton runs retry-step <id> <step> --ledger URL --reason TEXT [--as NAME] [--store-principal-names]';

/** What the actions read of the parsed flags. */
export interface ActionFlags {
  readonly ledger: FullLedger;
  readonly url: string;
  readonly reason?: string | undefined;
  readonly as?: string | undefined;
  readonly storePrincipalNames: boolean;
}

/** The operator: `--as NAME`, else the login name (also `baton inspect`'s local operator on loopback). */
export function operatorName(as: string | undefined): string {
  const name = as ?? process.env.USER ?? userInfo().username;
  if (name.trim() === '') throw usageError('--as needs a name');
  return name;
}

/** The servers' keys from `BATON_KEYS` (a run's state, a delegation's authority are sealed). */
export function keys() {
  const env = process.env.BATON_KEYS;
  if (env === undefined || env.trim() === '') {
    throw new CliError('BATON_KEYS is not set: give the keys of the servers that wrote the run (its state is sealed)');
  }
  try {
    return parseKeyRingEnv(env);
  } catch (error) {
    throw new CliError(oneLine(error));
  }
}

/** Print a complete outcome's text; a refusal is the one line of a failure. */
function report(outcome: RoundOutcome): number {
  if (outcome.type === 'error') throw new CliError(outcome.message);
  if (outcome.type !== 'complete') throw new CliError(`unexpected outcome ${outcome.type}`);
  const text = outcome.result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
  process.stdout.write(`${text}\n`);
  return 0;
}

/**
 * Run `cancel` (`arg`: the flows module), `terminate` (no `arg`) or `retry-step` (`arg`: the
 * step) on run `id`.
 */
export async function act(
  action: 'cancel' | 'terminate' | 'retry-step',
  id: string,
  arg: string | undefined,
  flags: ActionFlags,
): Promise<number> {
  const usage = action === 'cancel' ? CANCEL_USAGE : action === 'terminate' ? TERMINATE_USAGE : RETRY_STEP_USAGE;
  const flowsModule = action === 'cancel' ? arg : undefined;
  const reason = flags.reason?.trim();
  if (!reason) throw usageError('--reason TEXT is required: it goes into the audit trail', usage);
  const operator = operatorName(flags.as);
  const codec = createRequestStateCodec({ keys: keys() });
  let flows: readonly Flow<any, any>[] = [];
  if (flowsModule !== undefined) {
    flows = (
      await loadFlowsModule(flowsModule).catch((error) => {
        throw new CliError(oneLine(error));
      })
    ).flows;
  }
  const audit = await openAuditLog(flags.url, { pruneIntervalMs: 0 }).catch((error) => {
    throw new CliError(`cannot open the audit trail: ${oneLine(error)}`);
  });
  try {
    const runner = createRunner({
      flows,
      codec,
      ledger: flags.ledger,
      audit,
      ...(flags.storePrincipalNames ? { storePrincipalNames: true } : {}),
      log: (event) => {
        if (event.type === 'flow_error') process.stderr.write(`baton: warning: ${oneLine(event.error)}\n`);
      },
    });
    const request = { id, operator, reason };
    const outcome =
      action === 'cancel'
        ? runner.operators.cancel(request)
        : action === 'terminate'
          ? runner.operators.terminate(request)
          : runner.operators.retryStep({ ...request, step: arg! });
    return report(await outcome);
  } finally {
    await audit.close().catch(() => {});
  }
}
