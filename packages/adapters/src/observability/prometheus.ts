/**
 * The Prometheus text exposition format (version 0.0.4), written by hand for
 * the few families `GET /metrics` serves rather than through a client library
 * with a global registry and default process metrics. Per family: one
 * `# HELP` line (backslash and newline escaped), one `# TYPE` line, then its
 * samples `name{label="value",...} value`, label values escaped (backslash,
 * double quote, newline), numbers as Go's `ParseFloat` reads them (`+Inf`,
 * `-Inf`, `NaN`). Counter names end in `_total`; the body ends with a newline.
 */

/** The `Content-Type` of the text format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** One sample of a family: optional name suffix (`_sum`, `_count`), labels, value. */
export interface Sample {
  readonly suffix?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric family: its name (`baton_...`), type, help text and samples. */
export interface Family {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'summary';
  readonly help: string;
  readonly samples: readonly Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (text: string) => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/**
 * `families` as exposition text. Throws on a name or label name the format does not allow
 * (a programming error: every name here is a constant).
 *
 * @example
 * ```text
 * # HELP baton_rounds_total Rounds that produced an outcome, by outcome.
 * # TYPE baton_rounds_total counter
 * baton_rounds_total{outcome="complete"} 3
 * ```
 */
export function renderPrometheus(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const family of families) {
    if (!NAME.test(family.name)) throw new Error(`invalid metric name ${family.name}`);
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const pairs = Object.entries(sample.labels ?? {}).map(([label, value]) => {
        if (!LABEL.test(label) || label.startsWith('__')) throw new Error(`invalid label name ${label}`);
        return `${label}="${escapeLabel(value)}"`;
      });
      const labels = pairs.length > 0 ? `{${pairs.join(',')}}` : '';
      lines.push(`${family.name}${sample.suffix ?? ''}${labels} ${formatValue(sample.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
