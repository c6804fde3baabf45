import fp from 'fastify-plugin'
import type { DependencyStatus } from '../../src/dependency-status.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The external services the routes need, by name; readiness probes each of them. */
    dependencies: Map<string, DependencyStatus>
  }
}

export default fp(async (fastify) => {
  fastify.decorate('dependencies', new Map<string, DependencyStatus>())
}, { name: 'dependencies' })
