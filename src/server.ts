import Fastify, { type FastifyInstance } from 'fastify'
import closeWithGrace from 'close-with-grace'
import type { Registry } from 'prom-client'
import app from './app.js'
import { loadConfig, type Config } from './config.js'
import { serverOptions } from './http/server-options.js'
import { drainingShutdown } from './http/graceful-shutdown.js'
import { keepNextTickShapes } from './next-tick-shapes.js'

/** Time left after the drain for closing the stores and Redis before the process is stopped anyway. */
const CLOSE_MARGIN_MS = 5000

/**
 * A registry served at `GET /metrics` at the root, beside the service: a scrape is not an API request.
 * prom-client is a large module graph, so it is loaded only when metrics are on.
 */
async function serveMetrics (server: FastifyInstance): Promise<{ registry: Registry }> {
  const [{ Registry }, { metricsEndpoint }] = await Promise.all([import('prom-client'), import('./metrics/metrics-endpoint.js')])
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
  const metrics = config.METRICS_ENABLED ? await serveMetrics(server) : undefined
  server.register(app, { config, metrics })
  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS + CLOSE_MARGIN_MS }, async ({ signal, err }) => {
    if (err !== undefined) server.log.error({ err }, 'shutting down after an error')
    else server.log.info({ signal }, 'shutting down')
    await shutdown()
  })
  try {
    await server.listen({ port: config.PORT, host: config.HOST })
  } catch (error) {
    server.log.fatal({ err: error }, `could not start: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
}

await main()
