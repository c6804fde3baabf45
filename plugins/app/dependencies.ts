import fp from 'fastify-plugin'
import type { DependencyStatus } from '../../src/dependency-status.js'
import { decorateService } from '../../src/service-scope.js'

export default fp(async (fastify) => {
  decorateService(fastify, 'catsDependencies', new Map<string, DependencyStatus>())
}, { name: 'dependencies' })
