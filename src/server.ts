import Fastify from 'fastify'
import closeWithGrace from 'close-with-grace'
import { Registry } from 'prom-client'
import app from './app.js'
import { loadConfig, type Config } from './config.js'
import { serverOptions } from './http/server-options.js'
import { metricsEndpoint } from './metrics/metrics-endpoint.js'
import { drainingShutdown } from './http/graceful-shutdown.js'

/** Time left after the drain for closing the stores and Redis before the process is stopped anyway. */
const CLOSE_MARGIN_MS = 5000

async function main (): Promise<void> {
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
  // At the root, beside the service: a scrape is not an API request.
  const metrics = config.METRICS_ENABLED ? { registry: new Registry() } : undefined
  if (metrics !== undefined) server.register(metricsEndpoint, metrics)
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
