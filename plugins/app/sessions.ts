import fp from 'fastify-plugin'
import { openSessions } from '../../src/auth/sessions/open-sessions.js'
import { accessTokenSigner } from '../../src/auth/tokens/jwt-options.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** Login sessions, refresh tokens and logout, over the stores of the settings. */
export default fp(async (fastify) => {
  const config = serviceDecorator(fastify, 'catsConfig')
  const keys = serviceDecorator(fastify, 'catsTokenKeys')
  const { sessions, close } = openSessions(config, {
    database: serviceDecorator(fastify, 'catsDatabase'),
    redis: serviceDecorator(fastify, 'catsRedis'),
    users: serviceDecorator(fastify, 'catsUsers'),
    sign: accessTokenSigner(config, keys),
    refreshSecret: keys.refreshSecret,
    events: serviceDecorator(fastify, 'catsMetrics')?.sessions
  })
  fastify.addHook('onClose', close)
  decorateService(fastify, 'catsSessions', sessions)
}, { name: 'sessions', dependencies: ['users', 'database', 'redis', 'metrics'] })
