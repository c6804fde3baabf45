import fp from 'fastify-plugin'
import { decorateVerified, tokenGuard } from '../../src/auth/token-guard.js'
import { keyedVerify } from '../../src/auth/token-keys.js'
import { verifyOptions } from '../../src/auth/jwt-options.js'
import { userStillExists } from '../../src/auth/token-claims.js'
import { durationToSeconds } from '../../src/config.js'
import type { AppOptions } from '../../src/app-options.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The token guard as `catsAuthenticate`, with the service's denylist. */
export default fp<AppOptions>(async (fastify, opts) => {
  const config = serviceDecorator(fastify, 'catsConfig')
  const sessions = serviceDecorator(fastify, 'catsSessions')
  decorateVerified(fastify)
  decorateService(fastify, 'catsAuthenticate', tokenGuard({
    verify: keyedVerify(serviceDecorator(fastify, 'catsTokenKeys'), config.JWT_SECRET, verifyOptions(config)),
    lifetimeSeconds: durationToSeconds(config.JWT_EXPIRES_IN),
    validateToken: opts.validateToken ?? userStillExists(serviceDecorator(fastify, 'catsUsers')),
    isRevoked: opts.isRevoked,
    denylist: sessions
  }))
}, { name: 'authenticate', dependencies: ['users', 'sessions'] })
