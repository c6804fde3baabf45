import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config.js'
import { LoginAbandoned, LoginWaitedTooLong, TooManyLoginsInProgress } from '../../errors.js'
import { DEMO_USERS } from './demo-users.js'
import { HashQueue, type HashQueueEvents } from './hash-queue.js'
import { PasswordWorkers } from './password-workers.js'
import { DirectoryUsers, UserStore, type Accounts, type UserDirectory } from './users.js'
import { loadUsersFile, type UserRecord } from './users-file.js'

/** The accounts: the ones given, else USERS_FILE's, else (outside production) the demo users. */
function chooseUsers (config: Config, given: readonly UserRecord[] | undefined, log: FastifyBaseLogger): readonly UserRecord[] {
  if (given !== undefined) return given
  if (config.USERS_FILE !== undefined) return loadUsersFile(config.USERS_FILE)
  if (config.NODE_ENV === 'production') {
    throw new Error('USERS_FILE is required when NODE_ENV=production (the demo users are for development only)')
  }
  log.warn('USERS_FILE is not set: using the demo users john, chris and maria')
  return DEMO_USERS
}

/** Whether the `users` option is a host's lookup rather than a list. */
function isDirectory (users: readonly UserRecord[] | UserDirectory | undefined): users is UserDirectory {
  return users !== undefined && !Array.isArray(users)
}

/**
 * The user store with its password hashing: a bounded queue in front of worker threads. `close` stops the
 * workers; call it once no login is in flight.
 */
export function openUsers (config: Config, { users, log, hashQueueEvents }: {
  users: readonly UserRecord[] | UserDirectory | undefined
  log: FastifyBaseLogger
  hashQueueEvents?: HashQueueEvents
}): { users: Accounts, close: () => Promise<void> } {
  const { HASH_CONCURRENCY, HASH_QUEUE_MAX, HASH_QUEUE_WAIT_MS } = config
  const hashQueue = new HashQueue(HASH_CONCURRENCY, HASH_QUEUE_MAX, HASH_QUEUE_WAIT_MS, {
    whenFull: () => new TooManyLoginsInProgress(),
    whenLate: () => new LoginWaitedTooLong(),
    whenAbandoned: () => new LoginAbandoned()
  }, hashQueueEvents)
  const passwords = new PasswordWorkers(HASH_CONCURRENCY)
  const accounts = isDirectory(users)
    ? new DirectoryUsers(users, hashQueue, passwords.derive)
    : new UserStore(chooseUsers(config, users, log), hashQueue, passwords.derive)
  return { users: accounts, close: async () => { await passwords.close() } }
}
