// The `baton inspect` page: lists the flows and recorded instances, draws
// each flow's state graph as SVG from the layout the server computed with ELK
// (nested and parallel states as containers, root-level transitions from an
// "any state" marker), and for a selected instance colours the states
// visited, emphasises the transitions taken, says who started it, with what
// arguments (when the flow records values), where it stands, its times and
// decisions, and lists its rounds with each answer as `key:action` and the
// transition it caused. Updates live from /api/events (Server-Sent Events).
// An operator (per /api/session) cancels, terminates or retries a step of a
// waiting run with a reason: a same-origin POST carrying the session's token.
// No dependencies, no network beyond this server.

const SVG = 'http://www.w3.org/2000/svg';
/** Room the server's layout keeps under each edge label's text for the round badge (layout.ts). */
const BADGE_SLOT = 15;

const view = {
  flows: [],
  audit: false,
  flow: null,
  graph: null,
  instances: [],
  instance: null,
  round: null,
  session: null,
};

// ---------- helpers ----------

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
  if (!response.ok) throw new Error(body.detail ?? body.error ?? `${response.status} ${response.statusText}`);
  return body;
}

/** POST an operator action; resolves with `{ ok, message }` (a refusal's sentence when not ok). */
async function act(action, fid, payload) {
  const response = await fetch(`/api/instances/${encodeURIComponent(fid)}/${action}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-baton-csrf': view.session?.csrf ?? '' },
    body: JSON.stringify(payload),
  });
  const body = await response.json().catch(() => ({}));
  return { ok: response.ok, message: body.message ?? body.detail ?? `${response.status} ${response.statusText}` };
}

function setStatus(message) {
  document.getElementById('status').textContent = message ?? '';
}

/** Whose call ran a round, for people (an unknown value shows as is). */
const VIA_TEXT = {
  call: 'requester',
  decide: 'baton_decide',
  decide_api: 'decision API',
  decide_page: 'decision page',
  resume: 'baton_resume',
  withdraw: 'baton_withdraw',
};

/** Whether a round found its instance ended by another call's round (its `after` is then unknown). */
function endedElsewhere(round) {
  return round.after === null && round.round > 1 && round.outcome === 'complete';
}

/** Every state a round passed through, in order (consecutive repeats once). */
function pathText(round) {
  const values = [round.before, ...round.path].filter((v) => v !== null && v !== undefined).map(valueText);
  return values.filter((v, i) => i === 0 || v !== values[i - 1]).join(' → ');
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

// ---------- drawing ----------

function marker(id) {
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
    },
    svg('path', { d: 'M 0 0 L 10 5 L 0 10 z' }),
  );
}

/** An SVG path through ELK's points: cubic segments for spline routes, else straight lines. */
function pathOf(points) {
  if (points.length === 0) return '';
  let d = `M ${points[0].x} ${points[0].y}`;
  if ((points.length - 1) % 3 === 0 && points.length > 2) {
    for (let i = 1; i < points.length; i += 3) {
      const [a, b, c] = points.slice(i, i + 3);
      d += ` C ${a.x} ${a.y}, ${b.x} ${b.y}, ${c.x} ${c.y}`;
    }
  } else {
    for (const p of points.slice(1)) d += ` L ${p.x} ${p.y}`;
  }
  return d;
}

function drawGraph(graph, highlight) {
  const layout = graph.layout;
  const margin = 4;
  const width = Math.ceil(layout.width + 2 * margin);
  const height = Math.ceil(layout.height + 2 * margin);
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
  const parents = new Set(graph.nodes.map((node) => node.parent).filter((id) => id !== null));

  if (graph.anyState && layout.nodes[graph.anyState]) {
    const box = layout.nodes[graph.anyState];
    nodesLayer.append(
      svg(
        'g',
        { class: 'any-state', 'data-any-state': graph.anyState },
        svg('title', {}, 'transitions declared on the machine: taken from any state'),
        svg('rect', { x: box.x, y: box.y, width: box.w, height: box.h, rx: box.h / 2 }),
        svg('text', { x: box.x + box.w / 2, y: box.y + box.h / 2 + 4, 'text-anchor': 'middle' }, 'any state'),
      ),
    );
  }
  for (const node of graph.nodes) {
    const box = layout.nodes[node.id];
    if (!box) continue;
    const isContainer = parents.has(node.id);
    const classes = [isContainer ? 'container' : 'state', node.type];
    if (node.asks.length > 0) classes.push('asks');
    if (visited.has(node.id)) classes.push('visited');
    if (current.has(node.id) && !isContainer) classes.push('current');
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
    g.append(svg('rect', { class: 'box', x: box.x, y: box.y, width: box.w, height: box.h, rx: isContainer ? 10 : 8 }));
    if (node.type === 'final') {
      g.append(
        svg('rect', { class: 'inner', x: box.x + 3.5, y: box.y + 3.5, width: box.w - 7, height: box.h - 7, rx: 6 }),
      );
    }
    if (isContainer) {
      g.append(
        svg(
          'text',
          { class: 'title', x: box.x + 10, y: box.y + 17 },
          node.type === 'parallel' ? `${node.key} ∥` : node.key,
        ),
      );
    } else {
      g.append(svg('text', { class: 'label', x: box.x + box.w / 2, y: box.y + 20, 'text-anchor': 'middle' }, node.key));
      if (node.asks.length > 0) {
        g.append(
          svg(
            'g',
            { class: 'ask-tag' },
            svg('circle', { cx: box.x + box.w - 2, cy: box.y + 2, r: 8 }),
            svg('text', { x: box.x + box.w - 2, y: box.y + 6, 'text-anchor': 'middle' }, '?'),
          ),
        );
      }
      node.asks.forEach((ask, i) => {
        g.append(
          svg(
            'text',
            { class: 'ask', x: box.x + box.w / 2, y: box.y + 37 + i * 15, 'text-anchor': 'middle' },
            `asks ${ask.key} (${ask.kind})`,
          ),
        );
      });
    }
    if (node.initial) {
      const parentIsParallel = node.parent
        ? graph.nodes.find((n) => n.id === node.parent)?.type === 'parallel'
        : graph.rootType === 'parallel';
      if (!parentIsParallel) {
        g.append(svg('circle', { class: 'start', cx: box.x - 9, cy: box.y + 9, r: 4.5 }));
      }
    }
    nodesLayer.append(g);
  }

  for (const edge of graph.edges) {
    const route = layout.edges[edge.id];
    if (!route) continue;
    const rounds = taken.get(edge.id);
    const cls = `edge ${edge.kind}${rounds ? ' taken' : highlight ? ' dimmed' : ''}`;
    const g = svg('g', { class: cls, 'data-edge-id': edge.id, 'data-source': edge.source, 'data-target': edge.target });
    g.append(svg('title', {}, `${edge.source} → ${edge.target}: ${edge.label}`));
    g.append(svg('path', { d: pathOf(route.points), 'marker-end': rounds ? 'url(#arrow-taken)' : 'url(#arrow)' }));
    edgesLayer.append(g);
    if (!route.label) continue;
    // The layout keeps a slot under the label's text for the round badge.
    const { x, y, w, h: box } = route.label;
    const h = box - BADGE_SLOT;
    const label = svg('g', { class: cls, 'data-edge-label': edge.id });
    label.append(svg('rect', { class: 'lbg', x, y, width: w, height: h, rx: 3 }));
    label.append(svg('text', { class: 'elabel', x: x + w / 2, y: y + h - 4, 'text-anchor': 'middle' }, route.text));
    if (rounds) {
      const text = rounds.map((r) => `r${r}`).join(',');
      const bw = 10 + text.length * 6;
      label.append(
        svg(
          'g',
          { class: 'badge' },
          svg('rect', { x: x + w / 2 - bw / 2, y: y + h + 1, width: bw, height: BADGE_SLOT - 2, rx: 6.5 }),
          svg('text', { x: x + w / 2, y: y + h + BADGE_SLOT - 4.5, 'text-anchor': 'middle' }, text),
        ),
      );
    }
    labelsLayer.append(label);
  }
  const host = document.getElementById('graph');
  host.replaceChildren(canvas);
  // A graph wider than its panel is scaled down to fit while its text stays readable (60 %), else it scrolls.
  const room = host.clientWidth - 16;
  if (width > room && room / width >= 0.6) {
    canvas.setAttribute('width', String(room));
    canvas.setAttribute('height', String(Math.ceil((height * room) / width)));
    canvas.dataset.scaled = 'true';
  }
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

/** A JSON value, short. */
function valueJson(value) {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text;
}

/** "who": the readable id, or the principal's keyed hash. */
function whoText(name, hash) {
  return name ?? (hash ? `principal ${hash}` : 'unknown');
}

/** A quorum decision's votes: " · votes: bob approves via decide_page at …; …" ('' for none). */
function votesText(votes) {
  if (!votes || votes.length === 0) return '';
  return ` · votes: ${votes
    .map(
      (v) =>
        `${whoText(v.decider, v.deciderHash)} ${v.approves ? 'approves' : 'rejects'}${'value' in v ? ` ${valueJson(v.value)}` : ''}${
          v.via ? ` via ${v.via}` : ''
        } at ${timeText(v.decidedAt)}`,
    )
    .join('; ')}`;
}

function renderDetails() {
  const instance = view.instance;
  const details = instance?.details;
  const panel = document.getElementById('details');
  panel.hidden = !details;
  if (!details) return;
  const status = document.getElementById('instance-status');
  status.textContent = details.status.text;
  status.dataset.state = details.status.state;
  document.getElementById('started-by').textContent = whoText(details.startedBy.name, details.startedBy.hash);
  const args = document.getElementById('instance-args');
  if (details.args.shown) {
    const value = details.args.value;
    const entries = value && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value) : null;
    args.replaceChildren(
      ...(entries
        ? entries.flatMap(([key, v], i) => [
            ...(i ? [' '] : []),
            el('span', { class: 'arg', 'data-arg': key }, el('code', {}, `${key}=${valueJson(v)}`)),
          ])
        : [el('code', {}, valueJson(value))]),
    );
    args.classList.remove('hidden-value');
  } else {
    args.replaceChildren(details.args.reason);
    args.classList.add('hidden-value');
  }
  const times = details.times;
  document.getElementById('instance-times').textContent =
    `started ${timeText(times.started)} · last round ${timeText(times.lastRound)}` +
    (times.expires !== null ? ` · expires ${timeText(times.expires)}` : '') +
    (times.timerDue != null ? ` · timer scheduled ${timeText(times.timerDue)}` : '') +
    ((times.timersFired ?? []).length > 0
      ? ` · timers fired: ${times.timersFired.map((t) => `round ${t.round} at ${timeText(t.at)}`).join(', ')}`
      : '');
  const decisions = document.getElementById('decisions');
  decisions.replaceChildren(
    ...details.decisions.map((d) => {
      let text;
      if (d.status === 'decided') {
        text = `${d.answer ?? d.key}${'value' in d ? ` ${valueJson(d.value)}` : ''} by ${whoText(d.deciderDisplay ?? d.decider, d.deciderHash)}${
          d.onBehalfOf ? ` for ${d.onBehalfOf}` : ''
        }${d.decidedAt !== null ? ` at ${timeText(d.decidedAt)}` : ''}${d.round !== null ? ` (round ${d.round})` : ''}${d.via ? ` via ${d.via}` : ''}${votesText(d.votes)}`;
      } else {
        const whom = d.role ? `role ${d.role}` : "whoever the flow's rule allows";
        text = `${d.key}: ${d.status === 'pending' ? 'pending' : 'closed'} (${whom}${
          d.deadline !== null ? `, until ${timeText(d.deadline)}` : ''
        })${d.handedOver ? `, ${d.handedOver}` : ''}`;
      }
      return el('li', { 'data-decision': d.key, 'data-status': d.status }, text);
    }),
  );
  document.getElementById('decisions-section').hidden = details.decisions.length === 0;
  renderActions();
}

/** The operator actions of a run parked waiting in the ledger (disabled, saying why, for non-operators). */
function renderActions() {
  const instance = view.instance;
  const section = document.getElementById('actions-section');
  const result = document.getElementById('action-result');
  const parked = instance?.waiting?.source === 'ledger' && instance.waiting.status === 'waiting';
  // After an action the section stays, with its result, until another run is shown.
  const acted = Boolean(instance) && section.dataset.fid === instance.fid && result.textContent !== '';
  section.hidden = !view.session || !instance || (!parked && !acted);
  if (section.hidden) return;
  if (section.dataset.fid !== instance.fid) {
    section.dataset.fid = instance.fid;
    result.textContent = '';
    delete result.dataset.outcome;
  }
  const canAct = view.session.canAct && parked;
  document.getElementById('actions-note').textContent = !view.session.canAct
    ? `Read only: ${view.session.why}.`
    : parked
      ? ''
      : 'The run no longer waits: nothing left to act on.';
  for (const control of section.querySelectorAll('input, button')) control.disabled = !canAct;
}

async function onAction(event) {
  const button = event.target.closest('button[data-action]');
  if (!button || !view.instance) return;
  const result = document.getElementById('action-result');
  const reason = document.getElementById('action-reason').value.trim();
  const step = document.getElementById('action-step').value.trim();
  if (!reason) {
    result.textContent = 'Give a reason first: it goes into the audit trail.';
    result.dataset.outcome = 'refused';
    return;
  }
  const action = button.dataset.action;
  const fid = view.instance.fid;
  result.textContent = `${action}…`;
  delete result.dataset.outcome;
  const done = await act(action, fid, action === 'retry-step' ? { reason, step } : { reason }).catch((error) => ({
    ok: false,
    message: error.message,
  }));
  result.textContent = done.message;
  result.dataset.outcome = done.ok ? 'done' : 'refused';
  if (done.ok) {
    document.getElementById('action-reason').value = '';
    await sync({ reload: (id) => id === fid });
  }
}

/** The target state's key of an edge. */
function edgeTarget(id) {
  const edge = view.graph?.edges.find((e) => e.id === id);
  return edge ? edge.target.split('.').pop() : id;
}

function renderTimeline() {
  const panel = document.getElementById('timeline-panel');
  const instance = view.instance;
  panel.hidden = !instance;
  renderDetails();
  if (!instance) return;
  document.getElementById('timeline-title').textContent =
    `Timeline of ${instance.fid}${instance.currentDefinition ? '' : ' (recorded on another definition of the flow: the path may be off)'}`;
  const waiting = document.getElementById('waiting');
  // The instance panel's status says the same when the server sent details.
  waiting.hidden = !instance.waiting || Boolean(instance.details);
  waiting.textContent = instance.waiting ? `${instance.fid}: ${instance.waiting.text}` : '';
  const body = document.querySelector('#timeline tbody');
  body.replaceChildren(
    ...timelineEntries(instance).map((entry) => {
      if (entry.vote) return voteRow(entry);
      const round = entry.round;
      const answers = (round.answers ?? round.received).map((answer) => {
        const parts = [el('code', { class: 'answer' }, answer.text ?? `${answer.key}:${answer.action}`)];
        if ('value' in answer) parts.push(el('code', { class: 'value' }, ` ${valueJson(answer.value)}`));
        if (answer.held) parts.push(el('span', { class: 'held' }, ' (held from an earlier round)'));
        for (const id of answer.transitions ?? []) parts.push(el('span', { class: 'caused' }, ` → ${edgeTarget(id)}`));
        return el('span', { class: 'received', 'data-key': answer.key }, ...parts);
      });
      const row = el(
        'tr',
        { 'data-round': round.round, 'aria-selected': view.round === round.round ? 'true' : 'false' },
        el('td', {}, round.round),
        el('td', {}, timeText(round.at)),
        el(
          'td',
          { title: pathText(round) },
          el(
            'code',
            {},
            endedElsewhere(round)
              ? `${round.before === null ? '' : `${valueText(round.before)} → `}ended by another call's round`
              : `${valueText(round.before)} → ${valueText(round.after)}`,
          ),
        ),
        el('td', {}, round.asked.length ? round.asked.join(', ') : '—'),
        el('td', {}, ...(answers.length ? answers.flatMap((c, i) => (i ? [el('br'), c] : [c])) : ['—'])),
        el(
          'td',
          {},
          el('span', { class: `outcome ${round.outcome}` }, round.outcome),
          round.message ? ` ${round.message}` : '',
        ),
        el('td', { class: 'via' }, VIA_TEXT[round.via ?? 'call'] ?? round.via),
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

/**
 * The timeline's entries, ordered by time: every round, and every vote of a quorum decision as an
 * entry of its own (a vote comes before the round that delivered the decision it completed).
 */
function timelineEntries(instance) {
  const entries = instance.rounds.map((round) => ({ at: round.at, order: 1, n: round.round, round }));
  for (const decision of instance.details?.decisions ?? []) {
    for (const vote of decision.votes ?? [])
      entries.push({ at: vote.decidedAt, order: 0, n: 0, vote, key: decision.key });
  }
  return entries.sort((a, b) => a.at - b.at || a.order - b.order || a.n - b.n);
}

/** One quorum vote in the timeline: when, on which decision, who, how, through which channel. */
function voteRow({ vote, key }) {
  const how = `${whoText(vote.decider, vote.deciderHash)} ${vote.approves ? 'approves' : 'rejects'}`;
  return el(
    'tr',
    { class: 'vote', 'data-vote': key },
    el('td', {}, ''),
    el('td', {}, timeText(vote.decidedAt)),
    el('td', {}, el('code', {}, `vote on ${key}`)),
    el('td', {}, '—'),
    el(
      'td',
      {},
      el('code', { class: 'answer' }, how),
      ...('value' in vote ? [el('code', { class: 'value' }, ` ${valueJson(vote.value)}`)] : []),
    ),
    el('td', {}, el('span', { class: 'outcome vote' }, 'vote')),
    el('td', { class: 'via' }, vote.via ? (VIA_TEXT[vote.via] ?? vote.via) : ''),
    el('td', {}, ''),
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

async function sync(options = {}) {
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
    const changed = fid !== (view.instance?.fid ?? null);
    if (changed || (fid && options.reload?.(fid))) {
      view.instance = fid ? await api(`/api/instances/${encodeURIComponent(fid)}`) : null;
      if (changed) view.round = null;
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
    view.session = await api('/api/session');
    document.getElementById('viewer').textContent = view.session.signedIn ? `signed in as ${view.session.viewer}` : '';
    document.getElementById('sign-out').hidden = !view.session.signedIn;
  } catch (error) {
    setStatus(`cannot load flows: ${error.message}`);
  }
  document.getElementById('actions-section').addEventListener('click', (event) => void onAction(event));
  document.getElementById('sign-out').addEventListener('click', async () => {
    await fetch('/auth/logout', { method: 'POST', headers: { 'x-baton-csrf': view.session?.csrf ?? '' } });
    location.reload();
  });
  window.addEventListener('hashchange', () => void sync());
  let resizing;
  window.addEventListener('resize', () => {
    clearTimeout(resizing);
    resizing = setTimeout(render, 150);
  });
  await sync();
  // `?static` (e.g. `/?static#flow=…&fid=…`): no live stream, so the page settles for a screenshot or a print.
  if (new URLSearchParams(location.search).has('static')) document.body.dataset.live = 'off';
  else if (view.audit) live();
}

/** Live updates: reload the list and the open instance when a round is recorded; stop when the server says bye. */
function live() {
  if (typeof EventSource === 'undefined') return;
  const source = new EventSource('/api/events');
  const reload = (fids) => void sync({ reload: (fid) => fids === null || fids.includes(fid) });
  source.addEventListener('ready', () => {
    document.body.dataset.live = 'true';
    reload(null);
  });
  source.addEventListener('change', (event) => {
    let fids = null;
    try {
      fids = JSON.parse(event.data).instances;
    } catch {}
    reload(fids);
  });
  source.addEventListener('bye', () => {
    source.close();
    document.body.dataset.live = 'closed';
    setStatus('the inspect server stopped: live updates ended');
  });
}

void start();
