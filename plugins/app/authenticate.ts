import fp from 'fastify-plugin'
import { tokenGuard } from '../../src/auth/token-guard.js'
import { userStillExists } from '../../src/auth/token-claims.js'
import { durationToSeconds } from '../../src/config.js'
import type { AppOptions } from '../../src/app-options.js'

/** The token guard as `fastify.authenticate`, with the service's denylist. */
export default fp<AppOptions>(async (fastify, opts) => {
  fastify.decorateRequest('tokenClaims', null)
  fastify.decorate('authenticate', tokenGuard({
    verify: (token) => fastify.jwt.verify(token),
    lifetimeSeconds: durationToSeconds(fastify.config.JWT_EXPIRES_IN),
    validateToken: opts.validateToken ?? userStillExists(fastify.users),
    isRevoked: opts.isRevoked,
    // Read per request: the sessions plugin loads after this one.
    denylist: () => fastify.sessions
  }))
}, { name: 'authenticate', dependencies: ['jwt', 'users'] })
