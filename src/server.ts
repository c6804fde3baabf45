import Fastify, { type FastifyInstance } from 'fastify'
import closeWithGrace from 'close-with-grace'
import app from './app.js'
import type { MetricsRegistry } from './app-options.js'
import { loadConfig, type Config } from './config.js'
import { serverOptions } from './http/server-options.js'
import { drainingShutdown } from './http/graceful-shutdown.js'
import { keepNextTickShapes } from './next-tick-shapes.js'
import { importOptionalPeer, MissingOptionalPeer } from './optional-peer.js'

/** Time left after the drain for closing the stores and Redis before the process is stopped anyway. */
const CLOSE_MARGIN_MS = 5000

/**
 * A registry served at `GET /metrics` at the root, beside the service: a scrape is not an API request.
 * prom-client, an optional peer and a large module graph, is loaded only when metrics are on.
 */
async function serveMetrics (server: FastifyInstance): Promise<{ registry: MetricsRegistry }> {
  const [{ Registry }, { metricsEndpoint }] = await Promise.all([
    importOptionalPeer('prom-client', 'METRICS_ENABLED is true', () => import('prom-client')),
    import('./metrics/metrics-endpoint.js')
  ])
  const metrics = { registry: new Registry() }
  server.register(metricsEndpoint, metrics)
  return metrics
}

async function main (): Promise<void> {
  keepNextTickShapes()
  let config: Config
  try {
    // Standalone only: a .env file in the working directory fills in what the environment does not set.
    config = loadConfig(process.env, { envFile: '.env' })
  } catch (error) {
    console.error(`Invalid configuration: ${String(error)}`)
    process.exit(1)
  }
  const server = Fastify(serverOptions(config))
  const shutdown = drainingShutdown(server, config.SHUTDOWN_TIMEOUT_MS)
  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS + CLOSE_MARGIN_MS }, async ({ signal, err }) => {
    if (err !== undefined) server.log.error({ err }, 'shutting down after an error')
    else server.log.info({ signal }, 'shutting down')
    await shutdown()
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
