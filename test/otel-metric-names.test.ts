/**
 * The OpenTelemetry names of the `/metrics` families (`observability/otelMetrics.ts`) turn back
 * into the Prometheus names, by the OpenTelemetry-to-Prometheus rules a Prometheus exporter
 * applies: `.` to `_`, the unit's suffix (`s` -> `_seconds`; a unit in braces is an annotation,
 * left out), `_total` for a counter. Every family `GET /metrics` serves has an instrument; the
 * summary's `_sum` and `_count`, which have no OpenTelemetry kind of their own, are the one
 * documented exception. Pure: no SDK, no server.
 */
import { describe, expect, it } from 'vitest';
import { METRIC_HELP } from '../packages/adapters/src/observability/observability.js';
import { INSTRUMENTS } from '../packages/adapters/src/observability/otelMetrics.js';

/** The Prometheus name an exporter gives an instrument (OpenTelemetry's compatibility rules). */
function prometheusName(spec: { name: string; kind: string; unit: string }): string {
  let name = spec.name.replace(/\./g, '_');
  const unit = spec.unit === 's' ? 'seconds' : '';
  if (unit && !name.endsWith(`_${unit}`)) name += `_${unit}`;
  return spec.kind === 'counter' ? `${name}_total` : name;
}

describe('the OpenTelemetry names of the /metrics families', () => {
  it('has an instrument for every family /metrics serves', () => {
    for (const family of Object.keys(METRIC_HELP)) expect(INSTRUMENTS[family], family).toBeDefined();
  });

  it('turns back into the Prometheus names (but the summary sum and count)', () => {
    const exceptions = ['baton_ledger_redeem_duration_seconds_sum', 'baton_ledger_redeem_duration_seconds_count'];
    for (const [family, spec] of Object.entries(INSTRUMENTS)) {
      if (exceptions.includes(family)) continue;
      expect(prometheusName(spec), spec.name).toBe(family);
    }
    expect(exceptions.map((family) => prometheusName(INSTRUMENTS[family]!))).toEqual([
      'baton_ledger_redeem_duration_sum_seconds_total',
      'baton_ledger_redeem_duration_count_total',
    ]);
  });

  it('names each instrument once, in OpenTelemetry style', () => {
    const names = Object.values(INSTRUMENTS).map((spec) => spec.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^baton(\.[a-z][a-z_]*)+$/);
  });
});
