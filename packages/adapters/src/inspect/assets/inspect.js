// The `baton inspect` page: lists the flows and recorded instances, lays each
// flow's state graph out (a layered layout per container: compound states
// stack their children in rows, parallel states put their regions side by
// side) and draws it as SVG; for a selected instance it colours the states
// visited, emphasises the transitions taken and lists the rounds. No
// dependencies, no network beyond this server's /api.

const SVG = 'http://www.w3.org/2000/svg';
const FONT = '13px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif';
const SMALL_FONT = '11.5px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif';
const EDGE_FONT = '600 11px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif';
const H_GAP = 48;
const V_GAP = 66;
const PAD = 16;
const HEADER = 24;
const START_ROOM = 18;

const view = { flows: [], audit: false, flow: null, graph: null, instances: [], instance: null, round: null };

// ---------- helpers ----------

const measure = (() => {
  const context = document.createElement('canvas').getContext('2d');
  return (text, font) => {
    context.font = font;
    return context.measureText(text).width;
  };
})();

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

async function api(path) {
  const response = await fetch(path, { headers: { accept: 'application/json' } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error ?? `${response.status} ${response.statusText}`);
  return body;
}

function setStatus(message) {
  document.getElementById('status').textContent = message ?? '';
}

/** A state value as text: `a`, `a.b`, or `a.b, c.d` for parallel states. */
function valueText(value) {
  if (value === null || value === undefined) return '∅';
  if (typeof value === 'string') return value;
  const leaves = [];
  const walk = (prefix, v) => {
    if (typeof v === 'string') leaves.push(`${prefix}${v}`);
    else {
      const entries = Object.entries(v);
      if (entries.length === 0) leaves.push(prefix.slice(0, -1));
      for (const [key, sub] of entries) walk(`${prefix}${key}.`, sub);
    }
  };
  walk('', value);
  return leaves.join(', ');
}

function timeText(ms) {
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// ---------- layout ----------

/** Build the tree of layout boxes from the graph's nodes. */
function buildTree(graph) {
  const root = { id: null, key: graph.flow, type: graph.rootType, children: [], asks: [], isRoot: true };
  const byId = new Map([[null, root]]);
  for (const node of graph.nodes) byId.set(node.id, { ...node, children: [] });
  for (const node of graph.nodes) byId.get(node.parent).children.push(byId.get(node.id));
  return { root, byId };
}

function leafSize(node) {
  const label = measure(node.key, `600 ${FONT}`);
  const asks = node.asks.map((ask) => `asks ${ask.key} (${ask.kind})`);
  const width = Math.max(label, ...asks.map((text) => measure(text, SMALL_FONT)));
  node.askLines = asks;
  node.w = Math.max(96, Math.ceil(width) + 26);
  node.h = 32 + asks.length * 15 + (asks.length > 0 ? 4 : 0);
}

/** The ancestor of `id` that is a direct child of `container` (or undefined). */
function childOf(byId, container, id) {
  let node = byId.get(id);
  while (node && node.parent !== container.id) node = node.parent === null ? undefined : byId.get(node.parent);
  if (node && container.isRoot && node.parent === null) return node;
  return node && node.parent === container.id ? node : undefined;
}

/** Lay out a container's children; sets w/h on every node and x/y relative to the container. */
function layoutNode(node, ctx) {
  if (node.children.length === 0) {
    leafSize(node);
    return;
  }
  for (const child of node.children) layoutNode(child, ctx);
  const top = node.isRoot ? 0 : HEADER;
  if (node.type === 'parallel') {
    let x = PAD;
    let height = 0;
    for (const child of node.children) {
      child.x = x;
      child.y = top + PAD;
      x += child.w + H_GAP;
      height = Math.max(height, child.h);
    }
    node.separators = node.children.slice(1).map((child) => child.x - H_GAP / 2);
    node.w = Math.max(x - H_GAP + PAD, measure(node.key, `600 ${FONT}`) + 2 * PAD);
    node.h = top + height + 2 * PAD;
    return;
  }
  layered(node, ctx, top);
}

function layered(node, ctx, top) {
  const kids = node.children;
  const index = new Map(kids.map((kid, i) => [kid.id, i]));
  // Edges lifted to this container's children.
  const lifted = [];
  for (const edge of ctx.graph.edges) {
    const a = childOf(ctx.byId, node, edge.source);
    const b = childOf(ctx.byId, node, edge.target);
    if (a && b && a !== b) lifted.push({ edge, a, b });
  }
  // Depth-first from the initial child to find back edges; then longest-path ranks over the rest.
  const out = new Map(kids.map((kid) => [kid.id, []]));
  for (const l of lifted) out.get(l.a.id).push(l);
  const state = new Map();
  const back = new Set();
  const visit = (kid) => {
    state.set(kid.id, 1);
    for (const l of out.get(kid.id)) {
      const s = state.get(l.b.id);
      if (s === 1) back.add(l);
      else if (s === undefined) visit(l.b);
    }
    state.set(kid.id, 2);
  };
  const initial = kids.find((kid) => kid.initial);
  if (initial) visit(initial);
  for (const kid of kids) if (!state.has(kid.id)) visit(kid);
  const rank = new Map(kids.map((kid) => [kid.id, 0]));
  for (let round = 0; round < kids.length; round++) {
    let changed = false;
    for (const l of lifted) {
      if (back.has(l)) continue;
      if (rank.get(l.b.id) < rank.get(l.a.id) + 1) {
        rank.set(l.b.id, rank.get(l.a.id) + 1);
        changed = true;
      }
    }
    if (!changed) break;
  }
  // States nothing leads to (other than the initial one) go next to their first neighbour, not in row 0.
  for (const kid of kids) {
    if (kid.initial || lifted.some((l) => l.b === kid && !back.has(l))) continue;
    const firstOut = lifted.find((l) => l.a === kid && !back.has(l));
    if (firstOut) rank.set(kid.id, Math.max(0, rank.get(firstOut.b.id) - 1));
  }
  const rows = [];
  const addToRow = (r, item) => {
    if (!rows[r]) rows[r] = [];
    rows[r].push(item);
  };
  for (const kid of kids) addToRow(rank.get(kid.id), { node: kid, w: kid.w, h: kid.h });
  // Long forward edges get a waypoint in every row they cross (room for the edge and its label).
  for (const l of lifted) {
    if (back.has(l)) continue;
    const from = rank.get(l.a.id);
    const to = rank.get(l.b.id);
    if (to - from < 2) continue;
    const labelWidth = measure(l.edge.label, EDGE_FONT) + 10;
    l.dummies = [];
    for (let r = from + 1; r < to; r++) {
      const dummy = { dummy: l, w: r === from + 1 ? labelWidth : 12, h: 16, order: index.get(l.a.id) };
      addToRow(r, dummy);
      l.dummies.push(dummy);
    }
  }
  // Order each row by the mean position of its predecessors in the row above (one sweep down).
  const position = new Map();
  rows.forEach((row, r) => {
    if (!row) return;
    const score = (item) => {
      if (item.dummy) {
        const prev =
          r - 1 === rank.get(item.dummy.a.id) ? item.dummy.a : item.dummy.dummies[item.dummy.dummies.indexOf(item) - 1];
        return position.get(prev) ?? item.order;
      }
      const preds = lifted.filter((l) => l.b === item.node && !back.has(l) && rank.get(l.a.id) < r);
      const known = preds
        .map((l) => (l.dummies?.length ? l.dummies[l.dummies.length - 1] : l.a))
        .filter((p) => position.has(p));
      if (known.length === 0) return index.get(item.node.id);
      return known.reduce((sum, p) => sum + position.get(p), 0) / known.length;
    };
    const scored = row.map((item, i) => ({ item, s: score(item), i }));
    scored.sort((p, q) => p.s - q.s || p.i - q.i);
    rows[r] = scored.map((p) => p.item);
    for (const [i, item] of rows[r].entries()) position.set(item.dummy ? item : item.node, i);
  });
  // Place rows: centred horizontally, stacked vertically.
  const widths = rows.map((row) => (row ? row.reduce((sum, item) => sum + item.w, 0) + H_GAP * (row.length - 1) : 0));
  const inner = Math.max(...widths, measure(node.key, `600 ${FONT}`));
  let y = top + PAD + (initial ? START_ROOM : 0);
  rows.forEach((row, r) => {
    if (!row) return;
    const height = Math.max(...row.map((item) => item.h));
    let x = PAD + (inner - widths[r]) / 2;
    for (const item of row) {
      const target = item.dummy ? item : item.node;
      target.x = x;
      target.y = y + (height - item.h) / 2;
      x += item.w + H_GAP;
    }
    y += height + V_GAP;
  });
  node.w = inner + 2 * PAD;
  node.h = y - V_GAP + PAD;
  node.lifted = lifted;
  node.back = back;
}

/** Absolute positions and the edge routes of the whole graph. */
function layout(graph) {
  const { root, byId } = buildTree(graph);
  const ctx = { graph, byId };
  layoutNode(root, ctx);
  root.ax = 0;
  root.ay = 0;
  const routes = new Map();
  const place = (node) => {
    for (const l of node.lifted ?? []) {
      const points = (l.dummies ?? []).map((d) => ({ x: node.ax + d.x + d.w / 2, y: node.ay + d.y + d.h / 2 }));
      routes.set(l.edge.id, { points, back: node.back.has(l) });
    }
    for (const child of node.children) {
      child.ax = node.ax + child.x;
      child.ay = node.ay + child.y;
      place(child);
    }
  };
  place(root);
  return { root, byId, routes };
}

// ---------- drawing ----------

function centre(node) {
  return { x: node.ax + node.w / 2, y: node.ay + node.h / 2 };
}

/** Where the ray from the box's centre towards `p` leaves the box. */
function border(node, p) {
  const c = centre(node);
  const dx = p.x - c.x;
  const dy = p.y - c.y;
  if (dx === 0 && dy === 0) return c;
  const sx = dx === 0 ? Number.POSITIVE_INFINITY : node.w / 2 / Math.abs(dx);
  const sy = dy === 0 ? Number.POSITIVE_INFINITY : node.h / 2 / Math.abs(dy);
  const s = Math.min(sx, sy);
  return { x: c.x + dx * s, y: c.y + dy * s };
}

function edgeGeometry(source, target, route, bend) {
  if (source === target) {
    const x = source.ax + source.w;
    const y = source.ay + source.h / 2;
    return {
      d: `M ${x} ${y - 8} C ${x + 46} ${y - 30}, ${x + 46} ${y + 30}, ${x} ${y + 8}`,
      label: { x: x + 40, y },
      fixed: true,
    };
  }
  const waypoints = route?.points ?? [];
  if (waypoints.length > 0) {
    const start = border(source, waypoints[0]);
    const end = border(target, waypoints[waypoints.length - 1]);
    const pts = [start, ...waypoints, end];
    let d = `M ${start.x} ${start.y}`;
    for (let i = 1; i < pts.length; i++) {
      const p = pts[i - 1];
      const q = pts[i];
      const my = (p.y + q.y) / 2;
      d += ` C ${p.x} ${my}, ${q.x} ${my}, ${q.x} ${q.y}`;
    }
    return { d, label: waypoints[0], fixed: true };
  }
  const start = border(source, centre(target));
  const end = border(target, centre(source));
  const mx = (start.x + end.x) / 2;
  const my = (start.y + end.y) / 2;
  const length = Math.hypot(end.x - start.x, end.y - start.y) || 1;
  const nx = -(end.y - start.y) / length;
  const ny = (end.x - start.x) / length;
  const offset = bend + (route?.back ? 46 : 0);
  const cx = mx + nx * offset * 2;
  const cy = my + ny * offset * 2;
  const s2 = border(source, { x: cx, y: cy });
  const e2 = border(target, { x: cx, y: cy });
  const a = offset === 0 ? start : s2;
  const b = offset === 0 ? end : e2;
  const at =
    offset === 0
      ? (t) => ({ x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t })
      : (t) => ({
          x: (1 - t) ** 2 * a.x + 2 * (1 - t) * t * cx + t ** 2 * b.x,
          y: (1 - t) ** 2 * a.y + 2 * (1 - t) * t * cy + t ** 2 * b.y,
        });
  return {
    d: offset === 0 ? `M ${a.x} ${a.y} L ${b.x} ${b.y}` : `M ${a.x} ${a.y} Q ${cx} ${cy} ${b.x} ${b.y}`,
    label: at(0.5),
    at,
  };
}

function marker(id, cls) {
  return svg(
    'marker',
    {
      id,
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerWidth: 9,
      markerHeight: 9,
      markerUnits: 'userSpaceOnUse',
      orient: 'auto-start-reverse',
      class: cls,
    },
    svg('path', { d: 'M 0 0 L 10 5 L 0 10 z' }),
  );
}

function drawGraph(graph, highlight) {
  const { root, byId, routes } = layout(graph);
  const margin = 12;
  const width = Math.ceil(root.w + 2 * margin + 40);
  const height = Math.ceil(root.h + 2 * margin);
  const canvas = svg('svg', {
    id: 'graph-svg',
    xmlns: SVG,
    width,
    height,
    viewBox: `${-margin} ${-margin} ${width} ${height}`,
    role: 'img',
    'aria-label': `state graph of ${graph.flow}`,
  });
  canvas.append(svg('defs', {}, marker('arrow'), marker('arrow-taken'), marker('arrow-start')));
  const nodesLayer = svg('g', { class: 'nodes' });
  const edgesLayer = svg('g', { class: 'edges' });
  const labelsLayer = svg('g', { class: 'labels' });
  canvas.append(nodesLayer, edgesLayer, labelsLayer);

  const visited = new Set(highlight?.visited ?? []);
  const current = new Set(highlight?.current ?? []);
  const taken = highlight?.taken ?? new Map();

  const drawNode = (node) => {
    if (!node.isRoot) {
      const classes = [node.children.length > 0 ? 'container' : 'state', node.type];
      if (node.asks.length > 0) classes.push('asks');
      if (visited.has(node.id)) classes.push('visited');
      if (current.has(node.id) && node.children.length === 0) classes.push('current');
      if (highlight && !visited.has(node.id)) classes.push('dimmed');
      const g = svg('g', {
        class: classes.join(' '),
        'data-state-id': node.id,
        'data-asks': node.asks.map((ask) => ask.key).join(' ') || null,
      });
      g.append(
        svg(
          'title',
          {},
          `${node.id} (${node.type})${node.asks.length ? ` asks ${node.asks.map((a) => a.key).join(', ')}` : ''}`,
        ),
      );
      g.append(
        svg('rect', {
          class: 'box',
          x: node.ax,
          y: node.ay,
          width: node.w,
          height: node.h,
          rx: node.children.length ? 10 : 8,
        }),
      );
      if (node.type === 'final') {
        g.append(
          svg('rect', {
            class: 'inner',
            x: node.ax + 3.5,
            y: node.ay + 3.5,
            width: node.w - 7,
            height: node.h - 7,
            rx: 6,
          }),
        );
      }
      if (node.children.length > 0) {
        g.append(
          svg(
            'text',
            { class: 'title', x: node.ax + 10, y: node.ay + 16 },
            node.type === 'parallel' ? `${node.key} ∥` : node.key,
          ),
        );
        for (const sx of node.separators ?? []) {
          g.append(
            svg('line', {
              class: 'region-sep',
              x1: node.ax + sx,
              x2: node.ax + sx,
              y1: node.ay + HEADER,
              y2: node.ay + node.h - 6,
            }),
          );
        }
      } else {
        g.append(
          svg('text', { class: 'label', x: node.ax + node.w / 2, y: node.ay + 20, 'text-anchor': 'middle' }, node.key),
        );
        if (node.asks.length > 0) {
          g.append(
            svg(
              'g',
              { class: 'ask-tag' },
              svg('circle', { cx: node.ax + node.w - 2, cy: node.ay + 2, r: 8 }),
              svg('text', { x: node.ax + node.w - 2, y: node.ay + 6, 'text-anchor': 'middle' }, '?'),
            ),
          );
        }
        node.askLines.forEach((line, i) => {
          g.append(
            svg(
              'text',
              { class: 'ask', x: node.ax + node.w / 2, y: node.ay + 37 + i * 15, 'text-anchor': 'middle' },
              line,
            ),
          );
        });
      }
      nodesLayer.append(g);
    }
    const initial = node.type !== 'parallel' ? node.children.find((child) => child.initial) : undefined;
    if (initial) {
      const x = initial.ax + initial.w / 2;
      const y = initial.ay;
      nodesLayer.append(
        svg('circle', { class: 'start', cx: x, cy: y - START_ROOM + 2, r: 4.5 }),
        svg('line', {
          class: 'start-line',
          x1: x,
          y1: y - START_ROOM + 6,
          x2: x,
          y2: y - 1,
          'marker-end': 'url(#arrow-start)',
        }),
      );
    }
    for (const child of node.children) drawNode(child);
  };
  drawNode(root);

  // Edges between the same two states are fanned out.
  const pairs = new Map();
  for (const edge of graph.edges) {
    const key = [edge.source, edge.target].sort().join('→');
    pairs.set(key, [...(pairs.get(key) ?? []), edge]);
  }
  // Labels avoid the states and each other: try points along the edge, nearest the middle first.
  const obstacles = [...byId.values()]
    .filter((node) => !node.isRoot && node.children.length === 0)
    .map((node) => ({ x: node.ax - 2, y: node.ay - 2, w: node.w + 4, h: node.h + 4 }));
  const overlap = (p, q) =>
    Math.max(0, Math.min(p.x + p.w, q.x + q.w) - Math.max(p.x, q.x)) *
    Math.max(0, Math.min(p.y + p.h, q.y + q.h) - Math.max(p.y, q.y));
  const placeLabel = (geometry, width) => {
    const box = (p) => ({ x: p.x - width / 2, y: p.y - 8, w: width, h: 16 });
    if (geometry.fixed || !geometry.at) {
      obstacles.push(box(geometry.label));
      return geometry.label;
    }
    let best;
    for (const t of [0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8]) {
      const p = geometry.at(t);
      const cost = obstacles.reduce((sum, o) => sum + overlap(box(p), o), 0);
      if (!best || cost < best.cost) best = { p, cost };
      if (cost === 0) break;
    }
    obstacles.push(box(best.p));
    return best.p;
  };
  const ordered = [...graph.edges].sort(
    (p, q) => Number(!routes.get(p.id)?.points?.length) - Number(!routes.get(q.id)?.points?.length),
  );
  for (const edge of ordered) {
    const source = byId.get(edge.source);
    const target = byId.get(edge.target);
    const siblings = pairs.get([edge.source, edge.target].sort().join('→'));
    const i = siblings.indexOf(edge);
    const direction = edge.source < edge.target ? 1 : -1;
    const bend = siblings.length > 1 ? (i - (siblings.length - 1) / 2) * 22 * direction : 0;
    const geometry = edgeGeometry(source, target, routes.get(edge.id), bend);
    const rounds = taken.get(edge.id);
    const cls = rounds ? 'edge taken' : highlight ? 'edge dimmed' : 'edge';
    const g = svg('g', { class: cls, 'data-edge-id': edge.id, 'data-source': edge.source, 'data-target': edge.target });
    g.append(svg('title', {}, `${edge.source} → ${edge.target}: ${edge.label}`));
    g.append(svg('path', { d: geometry.d, 'marker-end': rounds ? 'url(#arrow-taken)' : 'url(#arrow)' }));
    edgesLayer.append(g);
    const labelGroup = svg('g', { class: cls, 'data-edge-label': edge.id });
    const w = measure(edge.label, EDGE_FONT) + 6;
    const badgeText = rounds ? rounds.map((r) => `r${r}`).join(',') : '';
    const badgeWidth = rounds ? Math.max(18, measure(badgeText, '700 10px sans-serif') + 10) : 0;
    const spot = placeLabel(geometry, w + (rounds ? badgeWidth + 2 : 0));
    geometry.label = { x: spot.x - (rounds ? (badgeWidth + 2) / 2 : 0), y: spot.y };
    labelGroup.append(
      svg('rect', { class: 'lbg', x: geometry.label.x - w / 2, y: geometry.label.y - 8, width: w, height: 15, rx: 3 }),
    );
    labelGroup.append(
      svg(
        'text',
        { class: 'elabel', x: geometry.label.x, y: geometry.label.y + 3.5, 'text-anchor': 'middle' },
        edge.label,
      ),
    );
    if (rounds) {
      const text = badgeText;
      const bw = badgeWidth;
      const bx = geometry.label.x + w / 2 + bw / 2 + 2;
      labelGroup.append(
        svg(
          'g',
          { class: 'badge' },
          svg('rect', { x: bx - bw / 2, y: geometry.label.y - 8, width: bw, height: 15, rx: 7.5, fill: '#2563eb' }),
          svg('text', { x: bx, y: geometry.label.y + 3.5, 'text-anchor': 'middle' }, text),
        ),
      );
    }
    labelsLayer.append(labelGroup);
  }
  const host = document.getElementById('graph');
  host.replaceChildren(canvas);
}

// ---------- panels ----------

function highlightOf(instance, round) {
  if (!instance) return undefined;
  const rounds = round === null ? instance.rounds : instance.rounds.filter((r) => r.round === round);
  const taken = new Map();
  for (const r of rounds) for (const id of r.edges) taken.set(id, [...(taken.get(id) ?? []), r.round]);
  const last = rounds[rounds.length - 1];
  return { visited: rounds.flatMap((r) => r.visited), current: last ? last.afterStates : [], taken };
}

function render() {
  if (view.graph) drawGraph(view.graph, highlightOf(view.instance, view.round));
  renderTimeline();
}

function renderFlows() {
  const list = document.getElementById('flows');
  list.replaceChildren(
    ...view.flows.map((flow) => {
      const button = el(
        'button',
        { type: 'button', 'data-flow': flow.name, 'aria-current': view.flow === flow.name ? 'true' : 'false' },
        flow.title ?? flow.name,
        el(
          'span',
          { class: 'sub' },
          `${flow.name} · ${flow.states} states${flow.asks.length ? ` · asks ${flow.asks.join(', ')}` : ''}`,
        ),
      );
      button.addEventListener('click', () => navigate({ flow: flow.name }));
      return el('li', {}, button);
    }),
  );
}

function renderInstances() {
  const list = document.getElementById('instances');
  const note = document.getElementById('instances-note');
  if (!view.audit) {
    note.textContent = 'No audit log attached: start with --audit sqlite:PATH, postgres://... or memory:.';
    list.replaceChildren();
    return;
  }
  note.textContent = view.instances.length === 0 ? `No recorded instances of ${view.flow ?? 'any flow'}.` : '';
  list.replaceChildren(
    ...view.instances.map((instance) => {
      const button = el(
        'button',
        {
          type: 'button',
          'data-fid': instance.fid,
          'aria-current': view.instance?.fid === instance.fid ? 'true' : 'false',
        },
        el('code', {}, instance.fid),
        el(
          'span',
          { class: 'sub' },
          `${instance.rounds} round${instance.rounds === 1 ? '' : 's'} · ${instance.lastOutcome} · ${timeText(instance.lastAt)}`,
        ),
      );
      button.addEventListener('click', () => navigate({ flow: instance.flow, fid: instance.fid }));
      return el('li', {}, button);
    }),
  );
}

function renderTimeline() {
  const panel = document.getElementById('timeline-panel');
  const instance = view.instance;
  panel.hidden = !instance;
  if (!instance) return;
  document.getElementById('timeline-title').textContent =
    `Timeline of ${instance.fid}${instance.currentDefinition ? '' : ' (recorded on another definition of the flow: the path may be off)'}`;
  const waiting = document.getElementById('waiting');
  waiting.hidden = !instance.waiting;
  waiting.textContent = instance.waiting ? `${instance.fid}: ${instance.waiting.text}` : '';
  const body = document.querySelector('#timeline tbody');
  body.replaceChildren(
    ...instance.rounds.map((round) => {
      const received = round.received.map((answer) => {
        const text = `${answer.key}:${answer.action}`;
        return el('code', { title: 'value' in answer ? JSON.stringify(answer.value) : null }, text);
      });
      const row = el(
        'tr',
        { 'data-round': round.round, 'aria-selected': view.round === round.round ? 'true' : 'false' },
        el('td', {}, round.round),
        el('td', {}, timeText(round.at)),
        el('td', {}, el('code', {}, `${valueText(round.before)} → ${valueText(round.after)}`)),
        el('td', {}, round.asked.length ? round.asked.join(', ') : '—'),
        el('td', {}, ...(received.length ? received.flatMap((c, i) => (i ? [', ', c] : [c])) : ['—'])),
        el(
          'td',
          {},
          el('span', { class: `outcome ${round.outcome}` }, round.outcome),
          round.message ? ` ${round.message}` : '',
        ),
        el('td', {}, round.ms),
      );
      row.addEventListener('click', () => {
        view.round = view.round === round.round ? null : round.round;
        render();
      });
      return row;
    }),
  );
}

// ---------- navigation ----------

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { flow: params.get('flow'), fid: params.get('fid') };
}

function navigate(target) {
  const params = new URLSearchParams();
  if (target.flow) params.set('flow', target.flow);
  if (target.fid) params.set('fid', target.fid);
  const hash = `#${params}`;
  if (location.hash === hash) void sync();
  else location.hash = hash;
}

async function sync() {
  const { flow, fid } = readHash();
  try {
    setStatus('');
    const name = flow ?? view.flows[0]?.name ?? null;
    if (name !== view.flow || !view.graph) {
      view.flow = name;
      view.graph = name ? await api(`/api/flows/${encodeURIComponent(name)}/graph`) : null;
      const meta = view.flows.find((f) => f.name === name);
      document.getElementById('flow-title').textContent = meta ? (meta.title ?? meta.name) : 'Select a flow';
      document.getElementById('flow-description').textContent = meta
        ? `${meta.name} — ${meta.description} (definition ${meta.hash})`
        : '';
    }
    if (view.audit) {
      const found = await api(`/api/instances?flow=${encodeURIComponent(view.flow ?? '')}`);
      view.instances = found.instances;
    }
    if (fid !== (view.instance?.fid ?? null)) {
      view.instance = fid ? await api(`/api/instances/${encodeURIComponent(fid)}`) : null;
      view.round = null;
    }
  } catch (error) {
    setStatus(error.message);
  }
  renderFlows();
  renderInstances();
  render();
  document.body.dataset.ready = 'true';
}

async function start() {
  try {
    const body = await api('/api/flows');
    view.flows = body.flows;
    view.audit = body.audit;
  } catch (error) {
    setStatus(`cannot load flows: ${error.message}`);
  }
  window.addEventListener('hashchange', () => void sync());
  await sync();
}

void start();
