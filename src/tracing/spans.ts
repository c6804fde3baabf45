import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api'
import type { FastifyRequest } from 'fastify'

/**
 * The service's own spans, made through @opentelemetry/api alone: whoever registers an SDK (the standalone server
 * when OTEL_* settings ask for traces, or a host app) receives them, and without one every call here is a no-op.
 * The check is made at each call, not once at start, so a host may register its SDK before or after the plugin.
 * The tracer too is asked for at each span: one taken before the SDK was registered, from another copy of the API
 * package than the SDK's (the bundled server has two), would stay a no-op.
 */
const TRACER_NAME = 'cats-auth-service'

export { SpanKind }

/** What a child span is made of, asked for only when a span is made. */
export interface SpanStart {
  name: string
  kind: SpanKind
  attributes: Attributes
}

/**
 * The active span when it is recorded; otherwise undefined: tracing off, the request sampled out, or no request in
 * progress (start-up, migrations), where the service makes no span of its own.
 */
export function recordingSpan (): Span | undefined {
  const span = trace.getActiveSpan()
  return span?.isRecording() === true ? span : undefined
}

/** What @fastify/otel adds to each request: its request span (null on a route where it is turned off). */
interface WithRequestSpan {
  opentelemetry: () => { span: Span | null }
}

const hasRequestSpan = (request: FastifyRequest): request is FastifyRequest & WithRequestSpan =>
  typeof (request as Partial<WithRequestSpan>).opentelemetry === 'function'

/**
 * The span that stands for a request, when recorded: @fastify/otel's request span where it is registered (by the
 * standalone server, or by a host, where the active span in a hook is that hook's own span), else the active span.
 */
export function requestSpan (request: FastifyRequest): Span | undefined {
  const span = hasRequestSpan(request) ? request.opentelemetry().span : trace.getActiveSpan()
  return span?.isRecording() === true ? span : undefined
}

/** A child of the recorded active span, started; undefined (and `start` not called) when there is none. */
export function childSpan (start: () => SpanStart): Span | undefined {
  if (recordingSpan() === undefined) return undefined
  const { name, kind, attributes } = start()
  return trace.getTracer(TRACER_NAME).startSpan(name, { kind, attributes })
}

/**
 * Ends a span that failed. Only the error's code or class is recorded (`error.type`): a message can quote the
 * data it failed on, and no span may carry a token, a password or a key.
 */
export function endFailed (span: Span, error: unknown): void {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined
  span.setAttribute('error.type', typeof code === 'string' ? code : error instanceof Error ? error.name : '_OTHER')
  span.setStatus({ code: SpanStatusCode.ERROR })
  span.end()
}

/**
 * Runs `work` in a child span of the recorded active span (the span is active inside it, so what `work` calls is
 * its child), or as it is when there is none: then nothing is added but the check.
 */
export function inChildSpan<T> (start: () => SpanStart, work: () => Promise<T>): Promise<T> {
  const span = childSpan(start)
  if (span === undefined) return work()
  return context.with(trace.setSpan(context.active(), span), work).then((result) => {
    span.end()
    return result
  }, (error: unknown) => {
    endFailed(span, error)
    throw error
  })
}

/** `trace_id` and `span_id` of the active span for a log line (pino's `mixin`); none outside a span. */
export function traceLogFields (): Record<string, string> {
  const span = trace.getActiveSpan()
  if (span === undefined) return {}
  const { traceId, spanId } = span.spanContext()
  return { trace_id: traceId, span_id: spanId }
}
