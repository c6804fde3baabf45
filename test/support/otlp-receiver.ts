import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

/** A value of a span's attribute as OTLP/JSON sends it (AnyValue). */
interface OtlpValue {
  stringValue?: string
  intValue?: number | string
  doubleValue?: number
  boolValue?: boolean
  arrayValue?: { values?: OtlpValue[] }
}

interface OtlpAttribute {
  key: string
  value: OtlpValue
}

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: OtlpAttribute[]
  events?: Array<{ name: string, attributes?: OtlpAttribute[] }>
  status?: { code?: number, message?: string }
}

interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] }
    scopeSpans?: Array<{ scope?: { name?: string }, spans?: OtlpSpan[] }>
  }>
}

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined

/** A span as received, its attributes as a plain object. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** Empty for a root span. */
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  scope: string
  attributes: Record<string, AttributeValue>
  resource: Record<string, AttributeValue>
  status: { code?: number, message?: string }
}

/** One export request as it arrived. */
export interface ExportRequest {
  path: string
  contentType: string
  body: Buffer
}

export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT: the exporters add /v1/traces. */
  endpoint: string
  requests: ExportRequest[]
  /** Every span of the JSON requests so far. */
  spans: () => ReceivedSpan[]
  /** Resolves with the spans once `done` holds for them; rejects after `timeoutMs`. */
  waitFor: (done: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number) => Promise<ReceivedSpan[]>
}

function valueOf (value: OtlpValue): AttributeValue {
  if (value.stringValue !== undefined) return value.stringValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.boolValue !== undefined) return value.boolValue
  return value.arrayValue?.values?.map(valueOf)
}

const attributesOf = (attributes: OtlpAttribute[] = []): Record<string, AttributeValue> =>
  Object.fromEntries(attributes.map(({ key, value }) => [key, valueOf(value)]))

/** The spans of one OTLP/JSON export request. */
export function spansOf (body: OtlpExport): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap(({ resource, scopeSpans }) => (scopeSpans ?? []).flatMap(({ scope, spans }) =>
    (spans ?? []).map((span) => ({
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId ?? '',
      name: span.name,
      kind: span.kind,
      scope: scope?.name ?? '',
      attributes: attributesOf(span.attributes),
      resource: attributesOf(resource?.attributes),
      status: span.status ?? {}
    }))))
}

/**
 * An OTLP/HTTP collector on 127.0.0.1, in the test's process, closed on teardown: it keeps every export request and
 * decodes the JSON ones. It answers `status` (200: accepted).
 */
export async function otlpReceiver (t: Test, status = 200): Promise<OtlpReceiver> {
  const requests: ExportRequest[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const contentType = String(request.headers['content-type'])
      requests.push({ path: String(request.url), contentType, body: Buffer.concat(chunks) })
      const json = contentType.startsWith('application/json')
      response.writeHead(status, { 'content-type': json ? 'application/json' : 'application/x-protobuf' })
      response.end(json ? '{}' : '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  const spans = (): ReceivedSpan[] => requests
    .filter(({ contentType }) => contentType.startsWith('application/json'))
    .flatMap(({ body }) => spansOf(JSON.parse(body.toString('utf8'))))
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    spans,
    waitFor: async (done, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs
      while (!done(spans())) {
        if (Date.now() > deadline) throw new Error(`spans not received within ${timeoutMs} ms: ${JSON.stringify(spans().map(({ name }) => name))}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      return spans()
    }
  }
}

/** The spans as an indented tree, children under their parent (for a test's comment). */
export function spanTree (spans: ReceivedSpan[], shown: (span: ReceivedSpan) => string): string {
  const ids = new Set(spans.map(({ spanId }) => spanId))
  const lines: string[] = []
  const add = (parent: ReceivedSpan, depth: number): void => {
    lines.push(`${'  '.repeat(depth)}${shown(parent)}`)
    for (const child of spans.filter(({ parentSpanId }) => parentSpanId === parent.spanId)) add(child, depth + 1)
  }
  for (const root of spans.filter(({ parentSpanId }) => !ids.has(parentSpanId))) add(root, 0)
  return lines.join('\n')
}
