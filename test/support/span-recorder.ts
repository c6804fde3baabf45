import type { Test } from 'tap'
import { context, trace } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'

/**
 * A host's SDK as a test registers it: every finished span kept in memory, the global tracer provider set until the
 * test's teardown, which shuts it down and clears the globals for the tests after it.
 */
export function recordSpans (t: Test): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter()
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  provider.register()
  t.teardown(async () => {
    await provider.shutdown()
    trace.disable()
    context.disable()
  })
  return exporter
}
