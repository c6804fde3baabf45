import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, diag, DiagLogLevel, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Span, type SpanStatus } from '@opentelemetry/api'
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan, type Span as SdkSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-node'
import type { FastifyBaseLogger, FastifyPluginCallback, FastifyRequest } from 'fastify'
import type { TracesSettings } from './settings.js'

/**
 * The OpenTelemetry SDK of the standalone server, loaded (with the packages below, optional peer dependencies)
 * only when the OTEL_* settings ask for traces. The library never imports this file: a host app owns its SDK.
 */

/** service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names the service otherwise. */
export const DEFAULT_SERVICE_NAME = 'cats-auth-service'

export interface Tracing {
  /** @fastify/otel: the span of each request. Register it (awaited) before any hook or route. */
  requestSpans: FastifyPluginCallback
  /** Sends the spans not sent yet, then stops tracing. */
  shutdown: () => Promise<void>
}

/** The span name and path of a request's span, as the semantic conventions give them: `PUT /cats/:id`, the path without its query string (it may carry a token). */
function nameRequestSpan (span: Span, request: FastifyRequest): void {
  const route = request.routeOptions.url
  span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
  span.setAttribute('url.path', request.url.split('?', 1)[0])
}

const UNSET: SpanStatus = { code: SpanStatusCode.UNSET }

/** Whether a span is a request's, answered with a 4xx: it has the response status, as @fastify/otel sets it. */
function answeredClientError (span: ReadableSpan): boolean {
  const status = span.attributes['http.response.status_code']
  return typeof status === 'number' && status >= 400 && status < 500
}

/**
 * The semantic conventions leave a server span's status unset for a 4xx (the client's error, not the server's);
 * @fastify/otel's onError hook sets it to ERROR for any error a route throws (a wrong password, a validation
 * failure) and only a 5xx should keep it. This processor hands on such a request span with its status unset; every
 * other span, and every 5xx, as it is. (An ERROR status cannot be unset on the span itself: the API ignores UNSET.)
 */
export class ClientErrorsUnset implements SpanProcessor {
  constructor (private readonly next: SpanProcessor) {}

  onStart (span: SdkSpan, parentContext: Context): void {
    this.next.onStart(span, parentContext)
  }

  onEnd (span: ReadableSpan): void {
    const unset = span.status.code === SpanStatusCode.ERROR && answeredClientError(span)
    this.next.onEnd(unset ? new Proxy(span, { get: (target, key) => key === 'status' ? UNSET : Reflect.get(target, key, target) }) : span)
  }

  async forceFlush (): Promise<void> {
    await this.next.forceFlush()
  }

  async shutdown (): Promise<void> {
    await this.next.shutdown()
  }
}

function spanProcessor (exporter: TracesSettings['exporters'][number], protocol: TracesSettings['protocol']): SpanProcessor {
  if (exporter === 'console') return new ClientErrorsUnset(new SimpleSpanProcessor(new ConsoleSpanExporter()))
  return new ClientErrorsUnset(new BatchSpanProcessor(protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter()))
}

/**
 * Registers the SDK globally (tracer provider, AsyncLocalStorage context, W3C trace-context and baggage propagation,
 * so an incoming `traceparent` is continued) and returns the request spans' plugin. The SDK's own warnings and errors
 * (a collector that cannot be reached or refuses the spans) go to `log` as warnings: the requests are served anyway.
 */
export function startTracing ({ exporters, protocol }: TracesSettings, log: FastifyBaseLogger): Tracing {
  // The level keeps the info, debug and verbose lines from ever reaching the log. An export runs in the context
  // of the request whose span ended last: its ids would be misleading here.
  const toLog = (message: string): void => context.with(ROOT_CONTEXT, () => log.warn(`traces: ${message}`))
  diag.setLogger({ error: toLog, warn: toLog, info: toLog, debug: toLog, verbose: toLog }, DiagLogLevel.WARN)
  const provider = new NodeTracerProvider({
    resource: defaultResource()
      .merge(resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME }))
      .merge(detectResources({ detectors: [envDetector] })),
    spanProcessors: exporters.map((exporter) => spanProcessor(exporter, protocol))
  })
  provider.register()
  // The request span and the handler's only: a span per hook would mostly measure microseconds. No exception
  // events: an error's message and stack stay in the log, whose redaction keeps tokens and passwords out.
  const instrumentation = new FastifyOtelInstrumentation({ instrumentHooks: false, recordExceptions: false, requestHook: nameRequestSpan })
  instrumentation.setTracerProvider(provider)
  return {
    requestSpans: instrumentation.plugin(),
    shutdown: async () => {
      instrumentation.disable()
      try {
        await provider.shutdown()
      } catch (error) {
        // The process stops anyway: the spans are lost, the shutdown goes on.
        log.warn({ err: error }, 'traces: the last spans could not be sent')
      }
      trace.disable()
      context.disable()
      propagation.disable()
      diag.disable()
    }
  }
}
