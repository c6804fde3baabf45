import fp from 'fastify-plugin'
import { loadConfig, type Config } from '../src/config.js'
import type { AppOptions } from '../src/app-options.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

/** Validates the settings once; every other plugin reads `fastify.config`. */
export default fp<AppOptions>(async (fastify, opts) => {
  fastify.decorate('config', loadConfig(opts.config))
}, { name: 'config' })
