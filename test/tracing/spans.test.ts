import t from 'tap'
import { context, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api'
import { recordSpans } from '../support/span-recorder.js'
import { childSpan, inChildSpan, recordingSpan, SpanKind, traceLogFields, type SpanStart } from '../../src/tracing/spans.js'

// The service's spans through @opentelemetry/api: children of a recorded span only, nothing without an SDK.

const QUERY: SpanStart = { name: 'SELECT', kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql' } }

t.test('without an SDK: the work runs as it is, no span is made and nothing is asked of the caller', async (t) => {
  let asked = false
  const start = (): SpanStart => { asked = true; return QUERY }
  t.equal(await inChildSpan(start, async () => 42), 42)
  t.equal(childSpan(start), undefined)
  await t.rejects(inChildSpan(start, async () => { throw new Error('failed') }), { message: 'failed' }, 'a failure passes through')
  t.notOk(asked, 'the span was never described')
  await trace.getTracer('host').startActiveSpan('request', async (span) => {
    t.equal(recordingSpan(), undefined, 'a span of the no-op tracer is not recorded')
    t.strictSame(traceLogFields(), {}, 'no ids in log lines: no context is kept without an SDK')
    span.end()
  })
})

t.test('with a host\'s SDK registered (after the plugin\'s modules were loaded)', async (t) => {
  const exporter = recordSpans(t)
  const host = trace.getTracer('host')
  t.beforeEach(() => exporter.reset())

  t.test('outside any span (start-up, migrations) no span is made', async (t) => {
    t.equal(await inChildSpan(() => QUERY, async () => 'done'), 'done')
    t.equal(childSpan(() => QUERY), undefined)
    t.strictSame(exporter.getFinishedSpans(), [])
  })

  t.test('inside a recorded span: a child with its name, kind and attributes, active while the work runs', async (t) => {
    await host.startActiveSpan('request', async (request) => {
      const inner = await inChildSpan(() => ({ name: 'transaction', kind: SpanKind.CLIENT, attributes: {} }),
        () => inChildSpan(() => QUERY, async () => recordingSpan()?.spanContext().spanId))
      t.strictSame(traceLogFields(), { trace_id: request.spanContext().traceId, span_id: request.spanContext().spanId }, 'log lines get the ids of the span in progress')
      request.end()
      const [query, transaction] = exporter.getFinishedSpans()
      t.equal(inner, query.spanContext().spanId, 'the statement\'s span is active inside its work')
      t.strictSame([transaction.name, transaction.parentSpanContext?.spanId], ['transaction', request.spanContext().spanId])
      t.strictSame([query.name, query.kind, query.attributes, query.parentSpanContext?.spanId], ['SELECT', SpanKind.CLIENT, QUERY.attributes, transaction.spanContext().spanId])
      t.equal(query.status.code, SpanStatusCode.UNSET)
    })
  })

  t.test('a failure: the span ends with an error status and error.type, the code or class of the error; no message', async (t) => {
    await host.startActiveSpan('request', async (request) => {
      const coded = Object.assign(new Error('duplicate key value (id)=(42)'), { code: '23505' })
      await t.rejects(inChildSpan(() => QUERY, async () => { throw coded }), coded)
      await t.rejects(inChildSpan(() => QUERY, async () => { throw new TypeError('not a function') }), TypeError)
      await t.rejects(inChildSpan(() => QUERY, () => Promise.reject(Object.assign(Object.create(null), { reason: 'odd' }))))
      request.end()
    })
    const failed = exporter.getFinishedSpans().filter(({ name }) => name === 'SELECT')
    t.strictSame(failed.map(({ attributes }) => attributes['error.type']), ['23505', 'TypeError', '_OTHER'])
    t.ok(failed.every(({ status }) => status.code === SpanStatusCode.ERROR && status.message === undefined), 'status ERROR, without the message')
    t.ok(failed.every(({ events }) => events.length === 0), 'no exception event')
  })

  t.test('inside a span that is not recorded (sampled out upstream) no span is made', async (t) => {
    const sampledOut = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.NONE })
    await context.with(trace.setSpan(context.active(), sampledOut), async () => {
      t.equal(recordingSpan(), undefined)
      t.equal(await inChildSpan(() => QUERY, async () => 'done'), 'done')
      t.strictSame(traceLogFields(), { trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331' }, 'the log still names the trace')
    })
    t.strictSame(exporter.getFinishedSpans(), [])
  })
})
