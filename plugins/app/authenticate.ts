import fp from 'fastify-plugin'
import { tokenGuard } from '../../src/auth/token-guard.js'
import { keyedVerify } from '../../src/auth/token-keys.js'
import { verifyOptions } from '../../src/auth/jwt-options.js'
import { userStillExists } from '../../src/auth/token-claims.js'
import { durationToSeconds } from '../../src/config.js'
import type { AppOptions } from '../../src/app-options.js'

/** The token guard as `fastify.authenticate`, with the service's denylist. */
export default fp<AppOptions>(async (fastify, opts) => {
  fastify.decorateRequest('tokenClaims', null)
  fastify.decorate('authenticate', tokenGuard({
    verify: keyedVerify(fastify.tokenKeys, fastify.config.JWT_SECRET, verifyOptions(fastify.config)),
    lifetimeSeconds: durationToSeconds(fastify.config.JWT_EXPIRES_IN),
    validateToken: opts.validateToken ?? userStillExists(fastify.users),
    isRevoked: opts.isRevoked,
    // Read per request: the sessions plugin loads after this one.
    denylist: () => fastify.sessions
  }))
}, { name: 'authenticate', dependencies: ['jwt', 'users'] })
