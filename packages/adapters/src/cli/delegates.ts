/**
 * `baton delegates set|list|remove`: an operator's absence delegates, on the
 * ledger the servers share. `set <principal> --to <principal> --from ISO
 * --until ISO [--roles a,b] --reason TEXT` says "while <principal> is away,
 * --to decides for them, with these roles of theirs"; `list` prints the
 * standing ones (`--all`: removed ones too); `remove <id> --reason TEXT`
 * marks one removed (the row stays as the record). The operator (`--as NAME`,
 * else the login name) is kept with each; principals appear as keyed hashes
 * unless `--store-principal-names`. Needs the servers' `BATON_KEYS`: the
 * absent principal and roles are sealed for the servers that check them.
 */
import { type AbsenceResult, type AbsenceView, createRequestStateCodec, createRunner } from '@baton/engine';
import { openLedger } from '@baton/store';
import { CliError, oneLine, usageError } from './cliError.js';
import { requireExistingLedger } from './existingLedger.js';
import { parseFlags } from './parseFlags.js';
import { keys, operatorName } from './runsActions.js';

/** The command's synopsis. */
export const USAGE =
  'baton delegates (set <principal> --to PRINCIPAL --from ISO --until ISO [--roles a,b] --reason TEXT | list [--all] | remove <id> --reason TEXT) --ledger URL [--as NAME] [--store-principal-names] [--json]';
const SET_USAGE =
  'baton delegates set <principal> --to PRINCIPAL --from ISO --until ISO [--roles a,b] --reason TEXT --ledger URL [--as NAME] [--store-principal-names] [--json]';
const LIST_USAGE = 'baton delegates list --ledger URL [--all] [--json]';
const REMOVE_USAGE = 'baton delegates remove <id> --reason TEXT --ledger URL [--as NAME] [--json]';

const HELP = `usage: ${USAGE}

Absence delegates: while a principal is away, another decides for them.

  ${SET_USAGE}
      from --from to --until (ISO 8601 times), --to may make every decision <principal> with
      --roles (comma-separated: the roles of theirs to use) may make, never on a request either made
  ${LIST_USAGE}
      the standing delegates, newest first (--all: removed ones too)
  ${REMOVE_USAGE}
      remove one (kept as a record with the operator and the reason)
      All need BATON_KEYS; the operator (--as, else the login name) is kept with each.
`;

/** The flags the command parses; the README documents each. */
export const OPTIONS = {
  ledger: { type: 'string' },
  to: { type: 'string' },
  from: { type: 'string' },
  until: { type: 'string' },
  roles: { type: 'string' },
  reason: { type: 'string' },
  all: { type: 'boolean' },
  as: { type: 'string' },
  'store-principal-names': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const iso = (ms: number) => new Date(ms).toISOString();

/** An ISO 8601 time with a date and a time (and a zone), or a usage error naming the flag. */
function time(flag: string, value: string | undefined): number {
  if (value === undefined) throw usageError(`--${flag} ISO is required`, SET_USAGE);
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw usageError(`--${flag} takes an ISO 8601 time, e.g. 2026-12-24T00:00:00Z`, SET_USAGE);
  return ms;
}

const line = (d: AbsenceView) =>
  `${d.id}: ${d.delegate} for ${d.principal}${d.roles.length > 0 ? ` [${d.roles.join(', ')}]` : ''}, ${iso(d.startsAt)} to ${iso(d.endsAt)}${d.active ? ' (in force)' : ''}: ${d.reason} (set by ${d.setBy})${d.removedAt === undefined ? '' : `; removed ${iso(d.removedAt)} by ${d.removedBy}: ${d.removedReason}`}`;

const json = (d: AbsenceView) => ({
  ...d,
  startsAt: iso(d.startsAt),
  endsAt: iso(d.endsAt),
  createdAt: iso(d.createdAt),
  ...(d.removedAt === undefined ? {} : { removedAt: iso(d.removedAt) }),
});

function report(result: AbsenceResult, asJson: boolean): number {
  if (result.status === 'refused') throw new CliError(result.message);
  process.stdout.write(
    asJson ? `${JSON.stringify(json(result.delegation), null, 2)}\n` : `${result.status}: ${line(result.delegation)}\n`,
  );
  return 0;
}

/** Run `baton delegates`; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  const [sub, ...rest] = positionals;
  if (values.help || sub === 'help') {
    process.stderr.write(HELP);
    return 0;
  }
  const usages: Record<string, [string, number]> = {
    set: [SET_USAGE, 1],
    list: [LIST_USAGE, 0],
    remove: [REMOVE_USAGE, 1],
  };
  const known = sub !== undefined && Object.hasOwn(usages, sub) ? usages[sub] : undefined;
  if (!known) throw usageError(sub === undefined ? 'missing a subcommand' : `unknown subcommand "${sub}"`, USAGE);
  const [usage, arity] = known;
  if (rest.length < arity) throw usageError(sub === 'set' ? 'missing <principal>' : 'missing <id>', usage);
  if (rest.length > arity) throw usageError(`unexpected argument "${rest[arity]}"`, usage);
  if (values.ledger === undefined) throw usageError('--ledger URL is required', usage);
  if (sub !== 'list' && !values.reason?.trim())
    throw usageError('--reason TEXT is required: it is kept with the delegate', usage);
  let set: { to: string; startsAt: number; endsAt: number; roles: string[] } | undefined;
  if (sub === 'set') {
    if (!values.to?.trim()) throw usageError('--to PRINCIPAL is required', usage);
    const startsAt = time('from', values.from);
    const endsAt = time('until', values.until);
    if (endsAt <= startsAt) throw usageError('--until must be after --from', usage);
    const roles = (values.roles ?? '')
      .split(',')
      .map((r) => r.trim())
      .filter((r) => r !== '');
    set = { to: values.to.trim(), startsAt, endsAt, roles };
  }
  const codec = createRequestStateCodec({ keys: keys() });
  requireExistingLedger(values.ledger);
  const ledger = await openLedger(values.ledger, { pruneIntervalMs: 0 }).catch((error) => {
    throw new CliError(`cannot open the ledger: ${oneLine(error)}`);
  });
  try {
    const runner = createRunner({
      flows: [],
      codec,
      ledger,
      ...(values['store-principal-names'] ? { storePrincipalNames: true } : {}),
    });
    const asJson = values.json === true;
    if (sub === 'list') {
      const all = await runner.operators.listAbsences({ all: values.all === true }).catch((error) => {
        throw new CliError(oneLine(error));
      });
      if (asJson) process.stdout.write(`${JSON.stringify({ delegates: all.map(json) }, null, 2)}\n`);
      else process.stdout.write(all.length === 0 ? 'No absence delegates.\n' : `${all.map(line).join('\n')}\n`);
      return 0;
    }
    const operator = operatorName(values.as);
    if (sub === 'remove') {
      return report(await runner.operators.removeAbsence({ id: rest[0]!, operator, reason: values.reason! }), asJson);
    }
    return report(
      await runner.operators.setAbsence({
        principal: rest[0]!,
        delegate: set!.to,
        roles: set!.roles,
        startsAt: set!.startsAt,
        endsAt: set!.endsAt,
        reason: values.reason!,
        operator,
      }),
      asJson,
    );
  } finally {
    await ledger.close().catch(() => {});
  }
}
