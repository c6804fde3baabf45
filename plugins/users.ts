import fp from 'fastify-plugin'
import { BoundedQueue } from '../src/auth/hash-queue.js'
import { httpError } from '../src/http/error-handler.js'
import { DEMO_USERS } from '../src/auth/demo-users.js'
import { loadUsersFile, UserStore, type UserRecord } from '../src/auth/users.js'
import type { AppOptions } from '../src/app.js'
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
  const { HASH_CONCURRENCY, HASH_QUEUE_MAX } = fastify.config
  const hashQueue = new BoundedQueue(HASH_CONCURRENCY, HASH_QUEUE_MAX, () =>
    httpError(503, 'Too many logins in progress; retry shortly', { headers: { 'retry-after': '1' } }))
  fastify.decorate('users', new UserStore(chooseUsers(fastify, opts), hashQueue))
}, { name: 'users', dependencies: ['config'] })
