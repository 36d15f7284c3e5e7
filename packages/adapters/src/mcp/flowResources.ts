/**
 * How a flow is served as a resource (`FlowExposure.resource`): at
 * `baton://flows/<name>` (`resource: true`; a template with the arguments as
 * query parameters when it takes any), or at a URI its author chooses
 * (`resource: { uri }`): a static URI (`test://static-text`) or an RFC 6570
 * URI template whose variables are the flow's arguments
 * (`test://template/{id}/data`). Each read is a round of the flow with the
 * URI's variables as arguments (strings, converted to the numbers and booleans
 * the schema declares); its result becomes the resource's contents
 * (`results.ts`, `toResourceResult`). Template variables get the flow's
 * completers (`completions.ts`).
 */
import { type Flow, FlowDefinitionError } from '@baton/engine';
import { ResourceTemplate, UriTemplate, type Variables } from '@modelcontextprotocol/server';
import { completeCallbacks } from './completions.js';
import { argumentTypes } from './flowArguments.js';

/** The URI prefix of flow resources: `baton://flows/<name>`. */
export const FLOW_RESOURCE_PREFIX = 'baton://flows/';

/**
 * A flow served as a resource at a URI of the author's choosing.
 *
 * @example `{ uri: 'test://template/{id}/data', mimeType: 'application/json' }`
 */
export interface FlowResource {
  /** A static URI, or an RFC 6570 URI template whose variables name the flow's arguments. */
  readonly uri: string;
  /** The resource's name in `resources/list` (default: the flow's name). */
  readonly name?: string;
  /** Listed, and the `mimeType` of the text contents a read returns (default `text/plain`). */
  readonly mimeType?: string;
}

/** A flow's resource registration, computed once. */
export interface PreparedResource {
  /** The name it is registered under. */
  readonly name: string;
  /** The static URI, for a resource without variables. */
  readonly uri?: string;
  /** The template, for a resource with variables. */
  readonly template?: ResourceTemplate;
  readonly metadata: { readonly title?: string; readonly description: string; readonly mimeType: string };
  /** JSON Schema types of the flow's arguments (to convert the URI's string variables). */
  readonly types: ReadonlyMap<string, string | undefined>;
}

/**
 * Matches `baton://flows/<name>` with any query parameters, in any order, all
 * optional (the SDK's RFC 6570 matcher wants every `{?...}` variable, in order).
 */
class FlowUriTemplate extends UriTemplate {
  readonly #base: string;
  constructor(base: string, names: readonly string[]) {
    super(`${base}{?${names.join(',')}}`);
    this.#base = base;
  }
  override match(uri: string): Variables | null {
    const query = uri.indexOf('?');
    if ((query < 0 ? uri : uri.slice(0, query)) !== this.#base) return null;
    return Object.fromEntries(new URLSearchParams(query < 0 ? '' : uri.slice(query + 1)));
  }
}

/**
 * The registration of `flow` as a resource (`exposure`: `true` or a {@link FlowResource}).
 *
 * @throws FlowDefinitionError when an author's URI template names a variable the flow has no argument for, or
 *   a static URI serves a flow with required arguments.
 */
export function prepareResource(
  flow: Flow,
  exposure: true | FlowResource,
  title: { readonly title?: string },
): PreparedResource {
  const types = argumentTypes(flow);
  const complete = completeCallbacks(flow);
  const callbacks = { list: undefined, ...(complete ? { complete } : {}) };
  if (exposure === true) {
    const base = `${FLOW_RESOURCE_PREFIX}${flow.name}`;
    const metadata = { ...title, description: flow.description, mimeType: 'text/plain' };
    if (types.size === 0) return { name: flow.name, uri: base, metadata, types };
    const template = new ResourceTemplate(new FlowUriTemplate(base, [...types.keys()]), callbacks);
    return { name: flow.name, template, metadata, types };
  }
  const metadata = { ...title, description: flow.description, mimeType: exposure.mimeType ?? 'text/plain' };
  const name = exposure.name ?? flow.name;
  const uriTemplate = new UriTemplate(exposure.uri);
  const variables = uriTemplate.variableNames;
  if (variables.length === 0) {
    if (!flow.args.safeParse({}).success) {
      throw new FlowDefinitionError(
        `flow "${flow.name}": resource ${exposure.uri} has no variables, but the flow needs arguments`,
      );
    }
    return { name, uri: exposure.uri, metadata, types };
  }
  const unknown = variables.filter((variable) => !types.has(variable));
  if (unknown.length > 0) {
    throw new FlowDefinitionError(
      `flow "${flow.name}": resource template ${exposure.uri} names no argument ${unknown.join(', ')}`,
    );
  }
  return { name, template: new ResourceTemplate(uriTemplate, callbacks), metadata, types };
}
