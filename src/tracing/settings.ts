/** Where the standalone server sends its spans: an OTLP collector, or standard output (for a look while developing). */
export type TraceExporter = 'otlp' | 'console'

/** OTLP over HTTP, in protobuf (the specification's default) or JSON. */
export type OtlpProtocol = 'http/protobuf' | 'http/json'

export interface TracesSettings {
  exporters: TraceExporter[]
  protocol: OtlpProtocol
}

const isExporter = (name: string): name is TraceExporter => name === 'otlp' || name === 'console'
const isProtocol = (name: string): name is OtlpProtocol => name === 'http/protobuf' || name === 'http/json'

/** A variable as the OpenTelemetry specification reads it: an empty value is unset. */
function setting (env: Record<string, string | undefined>, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === '' ? undefined : value
}

/**
 * Whether the standard OTEL_* variables ask the standalone server for traces, and how to send them; undefined
 * when they do not (tracing stays off and costs nothing). Off with OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none; on with OTEL_TRACES_EXPORTER=otlp and/or console, or, that variable unset, as soon as
 * an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): unlike the
 * specification's default exporter, nothing is sent anywhere unless asked for. Throws on an exporter or protocol
 * the server does not have (gRPC, Zipkin…). The exporters read the rest themselves (endpoint, headers, timeout,
 * compression), as do the sampler (OTEL_TRACES_SAMPLER) and the batch processor (OTEL_BSP_*).
 */
export function tracesSettings (env: Record<string, string | undefined>): TracesSettings | undefined {
  if (setting(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined
  const listed = (setting(env, 'OTEL_TRACES_EXPORTER') ?? '').split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== '')
  if (listed.includes('none')) return undefined
  const unknown = listed.filter((name) => !isExporter(name))
  if (unknown.length > 0) throw new Error(`OTEL_TRACES_EXPORTER: ${unknown.join(', ')} is not available here (otlp, console or none)`)
  const endpointSet = setting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined || setting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined
  const exporters: TraceExporter[] = listed.length > 0 ? [...new Set(listed.filter(isExporter))] : endpointSet ? ['otlp'] : []
  if (exporters.length === 0) return undefined
  const protocol = setting(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? setting(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf'
  if (isProtocol(protocol)) return { exporters, protocol }
  if (!exporters.includes('otlp')) return { exporters, protocol: 'http/protobuf' }
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL: ${protocol} is not available here (http/protobuf or http/json)`)
}
