import Fastify, { type FastifyInstance } from 'fastify'
import closeWithGrace from 'close-with-grace'
import app from './app.js'
import type { MetricsRegistry } from './app-options.js'
import { loadConfig, type Config } from './config.js'
import { serverOptions } from './http/server-options.js'
import { drainingShutdown } from './http/graceful-shutdown.js'
import { keepNextTickShapes } from './next-tick-shapes.js'
import { importOptionalPeer, MissingOptionalPeer } from './optional-peer.js'
import { tracesSettings, type TracesSettings } from './tracing/settings.js'
import type { Tracing } from './tracing/sdk.js'

/** Time left after the drain for closing the stores and Redis before the process is stopped anyway. */
const CLOSE_MARGIN_MS = 5000

/**
 * A registry served at `GET /metrics` at the root, beside the service: a scrape is not an API request.
 * prom-client, an optional peer and a large module graph, is loaded only when metrics are on.
 */
async function serveMetrics (server: FastifyInstance): Promise<{ registry: MetricsRegistry }> {
  // One after the other: the endpoint's module imports prom-client too, and its failure must not be the one seen.
  const { Registry } = await importOptionalPeer('prom-client', 'METRICS_ENABLED is true', () => import('prom-client'))
  const { metricsEndpoint } = await import('./metrics/metrics-endpoint.js')
  const metrics = { registry: new Registry() }
  server.register(metricsEndpoint, metrics)
  return metrics
}

/**
 * The OpenTelemetry SDK, started when the OTEL_* settings ask for traces. Its packages (optional peer dependencies)
 * are loaded only then, from node_modules; the process stops when they are missing.
 */
async function startTraces (settings: TracesSettings, server: FastifyInstance): Promise<Tracing> {
  let tracing: Tracing
  try {
    const { startTracing } = await import('./tracing/sdk.js')
    tracing = startTracing(settings, server.log)
  } catch (error) {
    server.log.fatal({ err: error }, `OTEL_* settings ask for traces, which could not start (their packages are listed in docs/traces.md): ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
  // The request spans start first, before any other hook and every route.
  await server.register(tracing.requestSpans)
  return tracing
}

async function main (): Promise<void> {
  keepNextTickShapes()
  let config: Config
  let traces: TracesSettings | undefined
  try {
    // Standalone only: a .env file in the working directory fills in what the environment does not set.
    // The OTEL_* variables are the SDK's: it reads them from the environment only.
    config = loadConfig(process.env, { envFile: '.env' })
    traces = tracesSettings(process.env)
  } catch (error) {
    console.error(`Invalid configuration: ${String(error)}`)
    process.exit(1)
  }
  const server = Fastify(serverOptions(config, undefined, { traceIds: traces !== undefined }))
  const tracing = traces === undefined ? undefined : await startTraces(traces, server)
  const shutdown = drainingShutdown(server, config.SHUTDOWN_TIMEOUT_MS)
  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS + CLOSE_MARGIN_MS }, async ({ signal, err }) => {
    if (err !== undefined) server.log.error({ err }, 'shutting down after an error')
    else server.log.info({ signal }, 'shutting down')
    await shutdown()
    // The spans of the last requests are sent before the process ends.
    await tracing?.shutdown()
  })
  // Whatever stops the start (an optional peer a setting needs and that is not installed, a database that
  // cannot be migrated…) ends it with one fatal line that says why.
  try {
    const metrics = config.METRICS_ENABLED ? await serveMetrics(server) : undefined
    server.register(app, { config, metrics })
    await server.listen({ port: config.PORT, host: config.HOST })
  } catch (error) {
    // A missing optional peer is for the operator to install: its message says all, and a stack would bury it.
    const details = error instanceof MissingOptionalPeer ? {} : { err: error }
    server.log.fatal(details, `could not start: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
}

await main()
