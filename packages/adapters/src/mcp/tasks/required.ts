/**
 * SEP-2575's Missing Required Client Capability for the tasks extension: a
 * request that cannot be served to a client that did not declare
 * `io.modelcontextprotocol/tasks` (in its per-request `_meta` client
 * capabilities, or at `initialize` on a connection) is refused with JSON-RPC
 * `-32021`, which the SDK answers with HTTP 400. That covers the extension's
 * own methods (`tasks/get`, `tasks/update`, `tasks/cancel`) and a `tools/call`
 * of a flow served with task support `required`, before anything runs.
 *
 * Wire: `{ code: -32021, message, data: { requiredCapabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } } } }`
 */
import { MissingRequiredClientCapabilityError, type ServerContext } from '@modelcontextprotocol/server';
import { type Connection, declaredCapabilities } from '../callContext.js';
import { declaresTasks, TASKS_EXTENSION_ID } from './wire.js';

/** The error for a request that needs the tasks extension from a client that did not declare it. */
export function tasksRequired(what: string): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } },
    `${what} needs the client capability extensions["${TASKS_EXTENSION_ID}"], which this request did not declare.`,
  );
}

/** Throw {@link tasksRequired} unless the request's client declared the tasks extension. */
export function requireTasks(server: Connection, ctx: ServerContext, what: string): void {
  if (!declaresTasks(declaredCapabilities(server, ctx))) throw tasksRequired(what);
}
