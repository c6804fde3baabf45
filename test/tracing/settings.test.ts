import t from 'tap'
import { tracesSettings } from '../../src/tracing/settings.js'

// Which OTEL_* settings turn the standalone server's traces on, and how they are sent.

const ENDPOINT = 'http://collector:4318'

t.test('off when nothing asks for traces: no variable, empty values, other OTEL_* variables', async (t) => {
  t.equal(tracesSettings({}), undefined)
  t.equal(tracesSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: ' ' }), undefined)
  t.equal(tracesSettings({ OTEL_SERVICE_NAME: 'cats', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: ENDPOINT }), undefined)
})

t.test('on with an OTLP endpoint, generic or for traces: OTLP over HTTP, protobuf by default', async (t) => {
  t.strictSame(tracesSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }), { exporters: ['otlp'], protocol: 'http/protobuf' })
  t.strictSame(tracesSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces` }), { exporters: ['otlp'], protocol: 'http/protobuf' })
})

t.test('the protocol: the traces one wins over the generic one; http/json and http/protobuf', async (t) => {
  t.strictSame(tracesSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), { exporters: ['otlp'], protocol: 'http/json' })
  t.strictSame(tracesSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
    { exporters: ['otlp'], protocol: 'http/json' })
})

t.test('OTEL_TRACES_EXPORTER: otlp (to the default endpoint), console, both; none turns traces off', async (t) => {
  t.strictSame(tracesSettings({ OTEL_TRACES_EXPORTER: 'otlp' }), { exporters: ['otlp'], protocol: 'http/protobuf' })
  t.strictSame(tracesSettings({ OTEL_TRACES_EXPORTER: 'console' }), { exporters: ['console'], protocol: 'http/protobuf' })
  t.strictSame(tracesSettings({ OTEL_TRACES_EXPORTER: ' Console , otlp,console' }), { exporters: ['console', 'otlp'], protocol: 'http/protobuf' })
  t.equal(tracesSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }), undefined)
  t.equal(tracesSettings({ OTEL_TRACES_EXPORTER: 'otlp,none' }), undefined)
})

t.test('OTEL_SDK_DISABLED=true turns traces off whatever else is set', async (t) => {
  t.equal(tracesSettings({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }), undefined)
  t.strictSame(tracesSettings({ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }), { exporters: ['otlp'], protocol: 'http/protobuf' })
})

t.test('an exporter or protocol the server does not have is refused with its name', async (t) => {
  t.throws(() => tracesSettings({ OTEL_TRACES_EXPORTER: 'otlp,zipkin,jaeger' }), { message: 'OTEL_TRACES_EXPORTER: zipkin, jaeger is not available here (otlp, console or none)' })
  t.throws(() => tracesSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    { message: 'OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not available here (http/protobuf or http/json)' })
  t.strictSame(tracesSettings({ OTEL_TRACES_EXPORTER: 'console', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), { exporters: ['console'], protocol: 'http/protobuf' },
    'the protocol matters only to OTLP')
})
