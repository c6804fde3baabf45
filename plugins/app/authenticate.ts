import fp from 'fastify-plugin'
import { decorateVerified, tokenGuard } from '../../src/auth/tokens/token-guard.js'
import { keyedVerify } from '../../src/auth/tokens/token-keys.js'
import { verifyOptions } from '../../src/auth/tokens/jwt-options.js'
import { userStillExists } from '../../src/auth/tokens/token-claims.js'
import type { AppOptions } from '../../src/app-options.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The token guard as `catsAuthenticate`, with the service's denylist, and the logout's as `catsLogoutGuard`. */
export default fp<AppOptions>(async (fastify, opts) => {
  const config = serviceDecorator(fastify, 'catsConfig')
  const sessions = serviceDecorator(fastify, 'catsSessions')
  decorateVerified(fastify)
  const options = {
    verify: keyedVerify(serviceDecorator(fastify, 'catsTokenKeys'), config.JWT_SECRET, verifyOptions(config)),
    lifetimeSeconds: config.durations.accessTokenSeconds,
    validateToken: opts.validateToken ?? userStillExists(serviceDecorator(fastify, 'catsUsers')),
    isRevoked: opts.isRevoked,
    denylist: sessions
  }
  const guard = tokenGuard(options)
  decorateService(fastify, 'catsAuthenticate', guard)
  // With REDIS_WAIT_REPLICAS, a logout answered 503 may have left its denial on the master without enough replicas:
  // its retry, with the same token, must get through to write and wait again (the host's own check still applies).
  decorateService(fastify, 'catsLogoutGuard', config.REDIS_WAIT_REPLICAS === 0 ? guard : tokenGuard({ ...options, denylist: { isRevoked: () => false } }))
}, { name: 'authenticate', dependencies: ['users', 'sessions'] })
