import { hashPassword } from '../../src/auth/login/password.js'
import type { UserRecord } from '../../src/auth/login/users-file.js'

/** scrypt parameters that make a hash cost microseconds: for tests where a login's cost is not the subject. */
export const CHEAP_HASH = { ln: 4, r: 8, p: 1 }

/**
 * The demo accounts (john/changeme, chris/secret, maria/guess: the same ids, names and passwords as
 * src/auth/login/demo-users.ts) with cheap scrypt parameters, for tests about what a login leads to rather than
 * about the cost of a hash: each login still checks its password against a real scrypt hash, in
 * microseconds instead of a fifth of a second of CPU.
 */
export async function cheapDemoUsers (): Promise<UserRecord[]> {
  const accounts = [{ id: 1, username: 'john', password: 'changeme' }, { id: 2, username: 'chris', password: 'secret' }, { id: 3, username: 'maria', password: 'guess' }]
  return Promise.all(accounts.map(async ({ id, username, password }) => ({ id, username, passwordHash: await hashPassword(password, CHEAP_HASH) })))
}
