import fp from 'fastify-plugin'
import { tokenGuard } from '../../src/auth/token-guard.js'
import { userStillExists } from '../../src/auth/token-claims.js'
import { durationToSeconds } from '../../src/config.js'
import type { AppOptions } from '../../src/app-options.js'
import type { Sessions } from '../../src/auth/sessions.js'

/** The token guard as `fastify.authenticate`, with the service's denylist. */
export default fp<AppOptions>(async (fastify, opts) => {
  fastify.decorateRequest('tokenClaims', null)
  // The service's sessions, looked up once the app is ready (their plugin loads after this one); a host's guard
  // scope has none.
  let sessions: Sessions | undefined
  fastify.addHook('onReady', async () => {
    sessions = fastify.hasDecorator('sessions') ? fastify.sessions : undefined
  })
  fastify.decorate('authenticate', tokenGuard({
    verify: (token) => fastify.jwt.verify(token),
    lifetimeSeconds: durationToSeconds(fastify.config.JWT_EXPIRES_IN),
    validateToken: opts.validateToken ?? userStillExists(fastify.users),
    isRevoked: opts.isRevoked,
    denylist: () => sessions
  }))
}, { name: 'authenticate', dependencies: ['jwt', 'users'] })
