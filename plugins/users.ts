import fp from 'fastify-plugin'
import { HashQueue } from '../src/auth/hash-queue.js'
import { PasswordWorkers } from '../src/auth/password-workers.js'
import { LoginAbandoned, LoginWaitedTooLong, TooManyLoginsInProgress } from '../src/http/errors.js'
import { DEMO_USERS } from '../src/auth/demo-users.js'
import { UserStore } from '../src/auth/users.js'
import { loadUsersFile, type UserRecord } from '../src/auth/users-file.js'
import type { AppOptions } from '../src/app-options.js'
import type { FastifyInstance } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    users: UserStore
  }
}

function chooseUsers (fastify: FastifyInstance, opts: AppOptions): readonly UserRecord[] {
  const { USERS_FILE, NODE_ENV } = fastify.config
  if (opts.users !== undefined) return opts.users
  if (USERS_FILE !== undefined) return loadUsersFile(USERS_FILE)
  if (NODE_ENV === 'production') {
    throw new Error('USERS_FILE is required when NODE_ENV=production (the demo users are for development only)')
  }
  fastify.log.warn('USERS_FILE is not set: using the demo users john, chris and maria')
  return DEMO_USERS
}

export default fp<AppOptions>(async (fastify, opts) => {
  const { HASH_CONCURRENCY, HASH_QUEUE_MAX, HASH_QUEUE_WAIT_MS } = fastify.config
  const hashQueue = new HashQueue(HASH_CONCURRENCY, HASH_QUEUE_MAX, HASH_QUEUE_WAIT_MS, {
    whenFull: () => new TooManyLoginsInProgress(),
    whenLate: () => new LoginWaitedTooLong(),
    whenAbandoned: () => new LoginAbandoned()
  }, fastify.metrics?.hashQueue)
  const passwords = new PasswordWorkers(HASH_CONCURRENCY)
  // Fastify closes the server, and so waits for logins in flight, before it runs onClose hooks.
  fastify.addHook('onClose', () => passwords.close())
  fastify.decorate('users', new UserStore(chooseUsers(fastify, opts), hashQueue, passwords.derive))
}, { name: 'users', dependencies: ['config', 'metrics'] })
