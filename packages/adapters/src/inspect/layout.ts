/**
 * Lays a flow's state graph out with ELK (elkjs, the layered algorithm Stately's
 * tools use): nested and parallel states as containers with their children
 * inside, one box per state sized for its key and what it asks, root-level
 * transitions leaving from an "any state" marker, and every edge routed with
 * its label placed by the algorithm (labels are spaced like nodes, so they do
 * not overlap each other or the states). The result is plain JSON in absolute
 * coordinates, served beside the graph; the page only draws it. Text widths
 * are estimated from character counts (the page's fonts are close to them),
 * so the layout is the same wherever it is computed.
 */

import elkModule from 'elkjs/lib/elk.bundled.js';
import type { ELK as ElkApi, ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api.js';
import type { FlowGraph, GraphNode } from './flowGraph.js';

/** A box in absolute coordinates (px). */
export interface LayoutBox {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

/** A point (px). */
export interface LayoutPoint {
  readonly x: number;
  readonly y: number;
}

/** One routed edge: its polyline (start, bends, end), its label's text and box. */
export interface LayoutEdge {
  readonly points: readonly LayoutPoint[];
  /** The label as drawn: the graph's label without the `input.` prefix of answer events ({@link edgeText}). */
  readonly text: string;
  /** The label's box; its bottom {@link BADGE_SLOT} px are room for the round badge. */
  readonly label: LayoutBox | null;
}

/**
 * A laid-out graph: `{ width, height, nodes: { [stateId]: box }, edges: { [edgeId]: { points, label } } }`.
 * The "any state" marker, when the flow has root-level transitions, is under its id (`FlowGraph.anyState`).
 */
export interface GraphLayout {
  readonly width: number;
  readonly height: number;
  readonly nodes: Readonly<Record<string, LayoutBox>>;
  readonly edges: Readonly<Record<string, LayoutEdge>>;
}

/** Font metrics the page uses (px per character, estimated). */
const KEY_CHAR = 7.6; // 600 13px
const ASK_CHAR = 6.3; // 11.5px
const LABEL_CHAR = 6.4; // 600 11px
const LABEL_HEIGHT = 15;

/** The text lines a state box shows under its key. */
export function askLines(node: Pick<GraphNode, 'asks'>): string[] {
  return node.asks.map((ask) => `asks ${ask.key} (${ask.kind})`);
}

/** An edge label as drawn: `input.confirm_deploy [guarded]` reads `confirm_deploy [guarded]` (the state says what it asks). */
export function edgeText(label: string): string {
  return label.replace(/^input\./, '');
}

/** Room kept under every edge label for the page's round badge (`r1`, `r2,r3`), px. */
export const BADGE_SLOT = 15;

/** The width of an edge label's box. */
export function labelWidth(label: string): number {
  return Math.ceil(label.length * LABEL_CHAR + 8);
}

/** elkjs is CommonJS: its constructor is `module.exports` (or `.default`, depending on the loader). */
const ElkConstructor = ((elkModule as unknown as { default?: unknown }).default ?? elkModule) as new () => ElkApi;

let elk: ElkApi | undefined;

/**
 * Lay a flow graph out (top to bottom).
 *
 * @example
 * ```ts
 * import { flowGraph, layoutGraph } from '@baton/adapters';
 * import { deployProduction } from './flows.js';
 *
 * const layout = await layoutGraph(flowGraph(deployProduction));
 * layout.nodes['deploy_production.confirmed']; // { x: 120, y: 210, w: 150, h: 51 }
 * ```
 */
export async function layoutGraph(graph: FlowGraph): Promise<GraphLayout> {
  elk ??= new ElkConstructor();
  const children = new Map<string | null, GraphNode[]>();
  for (const node of graph.nodes) children.set(node.parent, [...(children.get(node.parent) ?? []), node]);

  const toElk = (node: GraphNode): ElkNode => {
    const kids = children.get(node.id) ?? [];
    if (kids.length > 0) {
      return {
        id: node.id,
        labels: [{ text: node.key, width: node.key.length * KEY_CHAR + 20, height: 18 }],
        layoutOptions: {
          'elk.padding': '[top=30,left=14,bottom=14,right=14]',
          'elk.nodeLabels.placement': 'INSIDE V_TOP H_LEFT',
          'elk.nodeSize.constraints': 'NODE_LABELS MINIMUM_SIZE',
          'elk.nodeSize.minimum': `(${Math.ceil(node.key.length * KEY_CHAR + 40)},60)`,
          // A parallel state's regions side by side; a compound state's children top to bottom.
          'elk.direction': node.type === 'parallel' ? 'RIGHT' : 'DOWN',
        },
        children: kids.map(toElk),
      };
    }
    const lines = askLines(node);
    const width = Math.max(96, node.key.length * KEY_CHAR + 28, ...lines.map((l) => l.length * ASK_CHAR + 22));
    return { id: node.id, width: Math.ceil(width), height: 32 + lines.length * 15 + (lines.length ? 4 : 0) };
  };

  const top = (children.get(null) ?? []).map(toElk);
  if (graph.anyState) top.unshift({ id: graph.anyState, width: 84, height: 26 });
  const edges: ElkExtendedEdge[] = graph.edges.map((edge) => ({
    id: edge.id,
    sources: [edge.source],
    targets: [edge.target],
    labels: [
      { text: edgeText(edge.label), width: labelWidth(edgeText(edge.label)), height: LABEL_HEIGHT + BADGE_SLOT },
    ],
  }));
  const laid: ElkNode = await elk.layout({
    id: '__root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': graph.rootType === 'parallel' ? 'RIGHT' : 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.edgeRouting': 'SPLINES',
      'elk.layered.spacing.nodeNodeBetweenLayers': '44',
      'elk.layered.spacing.edgeNodeBetweenLayers': '18',
      'elk.layered.spacing.edgeEdgeBetweenLayers': '12',
      'elk.spacing.nodeNode': '24',
      'elk.spacing.edgeNode': '12',
      'elk.spacing.edgeEdge': '8',
      'elk.spacing.edgeLabel': '4',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.layered.edgeLabels.sideSelection': 'SMART_DOWN',
      'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
      'elk.padding': '[top=12,left=12,bottom=12,right=12]',
    },
    children: top,
    edges,
  });

  // ELK gives child positions relative to their parent, edge coordinates relative to the edge's container.
  const nodes: Record<string, LayoutBox> = {};
  const origin = new Map<string, LayoutPoint>([['__root', { x: 0, y: 0 }]]);
  const place = (node: ElkNode, parent: LayoutPoint) => {
    const x = parent.x + (node.x ?? 0);
    const y = parent.y + (node.y ?? 0);
    origin.set(node.id, { x, y });
    nodes[node.id] = { x: round(x), y: round(y), w: round(node.width ?? 0), h: round(node.height ?? 0) };
    for (const child of node.children ?? []) place(child, { x, y });
  };
  for (const child of laid.children ?? []) place(child, { x: 0, y: 0 });

  const routed: Record<string, LayoutEdge> = {};
  const collect = (container: ElkNode) => {
    for (const edge of (container.edges ?? []) as (ElkExtendedEdge & { container?: string })[]) {
      const at = origin.get(edge.container ?? container.id) ?? { x: 0, y: 0 };
      const shift = (p: { x: number; y: number }) => ({ x: round(at.x + p.x), y: round(at.y + p.y) });
      const points: LayoutPoint[] = [];
      for (const section of edge.sections ?? []) {
        points.push(shift(section.startPoint), ...(section.bendPoints ?? []).map(shift), shift(section.endPoint));
      }
      const label = edge.labels?.[0];
      routed[edge.id] = {
        points,
        text: label?.text ?? '',
        label:
          label && label.x !== undefined && label.y !== undefined
            ? { ...shift({ x: label.x, y: label.y }), w: round(label.width ?? 0), h: round(label.height ?? 0) }
            : null,
      };
    }
    for (const child of container.children ?? []) collect(child);
  };
  collect(laid);
  return { width: Math.ceil(laid.width ?? 0), height: Math.ceil(laid.height ?? 0), nodes, edges: routed };
}

const round = (n: number) => Math.round(n * 10) / 10;
