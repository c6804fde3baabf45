import fp from 'fastify-plugin'
import { openSessions } from '../../src/auth/open-sessions.js'
import type { Sessions } from '../../src/auth/sessions.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Login sessions, refresh tokens, logout and the denylist the token guard consults. */
    sessions: Sessions
  }
}

export default fp(async (fastify) => {
  const { sessions, close } = openSessions(fastify.config, {
    database: fastify.database,
    redis: fastify.redis,
    users: fastify.users,
    sign: (claims) => fastify.jwt.sign(claims),
    refreshSecret: fastify.tokenKeys.refreshSecret,
    events: fastify.metrics?.sessions
  })
  fastify.addHook('onClose', close)
  fastify.decorate('sessions', sessions)
}, { name: 'sessions', dependencies: ['jwt', 'users', 'database', 'redis', 'metrics'] })
