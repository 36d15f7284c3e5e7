/**
 * The hand-written Prometheus text renderer behind `GET /metrics`: HELP and
 * TYPE once per family before its samples, label values and help text
 * escaped as the 0.0.4 format requires, special values spelled as Prometheus
 * parses them, and names the format forbids refused.
 */
import { describe, expect, it } from 'vitest';
import { renderPrometheus } from '../packages/adapters/src/observability/prometheus.js';

describe('renderPrometheus', () => {
  it('writes families with escaped help and label values', () => {
    const text = renderPrometheus([
      {
        name: 'baton_x_total',
        type: 'counter',
        help: 'Back\\slash and\nnewline.',
        samples: [
          { labels: { reason: 'a"b\\c\nd' }, value: 3 },
          { labels: { reason: 'plain', kind: 'k' }, value: 0 },
        ],
      },
      {
        name: 'baton_d_seconds',
        type: 'summary',
        help: 'A summary.',
        samples: [
          { labels: { quantile: '0.5' }, value: 0.25 },
          { suffix: '_sum', value: Number.POSITIVE_INFINITY },
          { suffix: '_count', value: Number.NaN },
        ],
      },
    ]);
    expect(text).toBe(
      [
        '# HELP baton_x_total Back\\\\slash and\\nnewline.',
        '# TYPE baton_x_total counter',
        'baton_x_total{reason="a\\"b\\\\c\\nd"} 3',
        'baton_x_total{reason="plain",kind="k"} 0',
        '# HELP baton_d_seconds A summary.',
        '# TYPE baton_d_seconds summary',
        'baton_d_seconds{quantile="0.5"} 0.25',
        'baton_d_seconds_sum +Inf',
        'baton_d_seconds_count NaN',
        '',
      ].join('\n'),
    );
  });

  it('refuses names the format does not allow', () => {
    expect(() => renderPrometheus([{ name: 'baton-x', type: 'gauge', help: 'h', samples: [] }])).toThrow(/name/);
    expect(() =>
      renderPrometheus([{ name: 'baton_x', type: 'gauge', help: 'h', samples: [{ labels: { __x: 'v' }, value: 1 }] }]),
    ).toThrow(/label/);
  });
});
