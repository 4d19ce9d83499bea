import { ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace';
import { expect, it } from 'vitest';
import { samplerOf } from './tracing.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const decide = (name: string, arg?: number, parentSampled?: boolean, traceId = TRACE) => {
  const parent =
    parentSampled === undefined
      ? ROOT_CONTEXT
      : trace.setSpanContext(ROOT_CONTEXT, {
          traceId,
          spanId: 'b7ad6b7169203331',
          traceFlags: parentSampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
          isRemote: true,
        });
  return samplerOf(name, arg).shouldSample(parent, traceId, 'tools/call x', SpanKind.SERVER, {}, []).decision;
};
const ON = SamplingDecision.RECORD_AND_SAMPLED;
const OFF = SamplingDecision.NOT_RECORD;

it('follows the client’s sampled flag by default, and records a trace of its own', () => {
  expect([
    decide('parentbased_always_on', undefined, true),
    decide('parentbased_always_on', undefined, false),
  ]).toEqual([ON, OFF]);
  expect(decide('parentbased_always_on')).toBe(ON);
  expect(samplerOf().toString()).toBe(samplerOf('parentbased_always_on').toString());
});

it('records nothing with always_off, everything with always_on, whatever the client says', () => {
  expect([decide('always_off'), decide('always_off', undefined, true)]).toEqual([OFF, OFF]);
  expect([decide('always_on'), decide('always_on', undefined, false)]).toEqual([ON, ON]);
  expect(decide('parentbased_always_off')).toBe(OFF);
  expect(decide('parentbased_always_off', undefined, true)).toBe(ON);
});

it('keeps the ratio of traces its argument names, by trace id', () => {
  expect([decide('traceidratio', 0), decide('traceidratio', 1)]).toEqual([OFF, ON]);
  // A trace id is kept when its low 64 bits fall below the ratio: half of these ids, give or take.
  const ids = Array.from(
    { length: 400 },
    (_, i) => `${'0'.repeat(16)}${(BigInt(i) * 46116860184273879n).toString(16).padStart(16, '0')}`,
  );
  const kept = ids.filter((id) => decide('traceidratio', 0.5, undefined, id) === ON).length;
  expect(kept).toBeGreaterThan(100);
  expect(kept).toBeLessThan(300);
  // Under a parent, the parent decides.
  expect(decide('parentbased_traceidratio', 0, true)).toBe(ON);
});

it('refuses a name OpenTelemetry does not define', () => {
  expect(() => samplerOf('sometimes')).toThrow(/unknown sampler sometimes/);
  expect(() => samplerOf('parentbased_sometimes')).toThrow(/unknown sampler/);
});
