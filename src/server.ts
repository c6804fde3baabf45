import Fastify from 'fastify'
import closeWithGrace from 'close-with-grace'
import { Registry } from 'prom-client'
import app from './app.js'
import { loadConfig, type Config } from './config.js'
import { serverOptions } from './http/server-options.js'
import { metricsEndpoint } from './metrics/metrics-endpoint.js'

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
  // At the root, beside the service: a scrape is not an API request.
  const metrics = config.METRICS_ENABLED ? { registry: new Registry() } : undefined
  if (metrics !== undefined) server.register(metricsEndpoint, metrics)
  server.register(app, { config, metrics })
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err !== undefined) server.log.error({ err }, 'shutting down after an error')
    else server.log.info({ signal }, 'shutting down')
    // close() waits for open connections; keep-alive ones that finish a request meanwhile are closed here.
    const closeIdle = setInterval(() => server.server.closeIdleConnections(), 50)
    await server.close()
    clearInterval(closeIdle)
  })
  try {
    await server.listen({ port: config.PORT, host: config.HOST })
  } catch (error) {
    server.log.fatal({ err: error }, 'could not start')
    process.exit(1)
  }
}

await main()
