import fp from 'fastify-plugin'
import { openUsers } from '../../src/auth/open-users.js'
import type { UserStore } from '../../src/auth/users.js'
import type { AppOptions } from '../../src/app-options.js'

declare module 'fastify' {
  interface FastifyInstance {
    users: UserStore
  }
}

export default fp<AppOptions>(async (fastify, opts) => {
  const { users, close } = openUsers(fastify.config, { users: opts.users, log: fastify.log, hashQueueEvents: fastify.metrics?.hashQueue })
  // Fastify closes the server, and so waits for logins in flight, before it runs onClose hooks.
  fastify.addHook('onClose', close)
  fastify.decorate('users', users)
}, { name: 'users', dependencies: ['metrics'] })
