import fp from 'fastify-plugin'
import { openUsers } from '../../src/auth/login/open-users.js'
import type { AppOptions } from '../../src/app-options.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

/** The accounts that may log in, with the password hashing of their logins. */
export default fp<AppOptions>(async (fastify, opts) => {
  const { users, close } = openUsers(serviceDecorator(fastify, 'catsConfig'), {
    users: opts.users,
    log: fastify.log,
    hashQueueEvents: serviceDecorator(fastify, 'catsMetrics')?.hashQueue
  })
  // Fastify closes the server, and so waits for logins in flight, before it runs onClose hooks.
  fastify.addHook('onClose', close)
  decorateService(fastify, 'catsUsers', users)
}, { name: 'users', dependencies: ['metrics'] })
