import { readFileSync } from 'node:fs'
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { UserId } from './schemas.js'
import { parseHash, verifyPassword } from './password.js'
import type { BoundedQueue } from './hash-queue.js'

export const UserRecord = Type.Object({
  id: UserId,
  username: Type.String({ minLength: 1, maxLength: 128 }),
  passwordHash: Type.String({ description: 'scrypt PHC string from npm run hash-password' })
})
export type UserRecord = Static<typeof UserRecord>

const UsersFile = TypeCompiler.Compile(Type.Array(UserRecord))

// Verified when a username is unknown, so that case costs as much as a wrong password.
const DUMMY_HASH = '$scrypt$ln=14,r=8,p=5$6MYwn4R6aYi+BUlQScO3UA$cq0/cC9zh6nSSFp+7Vvt2UhnQYZN+Rt39D3ejUJdzGE'

export class UserStore {
  readonly #byUsername = new Map<string, UserRecord>()
  readonly #byId = new Map<UserId, UserRecord>()
  readonly #hashQueue: BoundedQueue

  /** Throws when ids or usernames repeat or a hash is not a valid scrypt string. */
  constructor (users: readonly UserRecord[], hashQueue: BoundedQueue) {
    for (const user of users) {
      if (this.#byId.has(user.id)) throw new Error(`duplicate user id ${JSON.stringify(user.id)}`)
      if (this.#byUsername.has(user.username)) throw new Error(`duplicate username "${user.username}"`)
      if (parseHash(user.passwordHash) === undefined) throw new Error(`user "${user.username}" has an invalid passwordHash`)
      this.#byId.set(user.id, user)
      this.#byUsername.set(user.username, user)
    }
    this.#hashQueue = hashQueue
  }

  findById (id: UserId): UserRecord | undefined {
    return this.#byId.get(id)
  }

  /** Resolves to the user when the password matches; takes as long for an unknown username. */
  async verifyCredentials (username: string, password: string): Promise<UserRecord | undefined> {
    const user = this.#byUsername.get(username)
    const matches = await this.#hashQueue.run(() => verifyPassword(password, user?.passwordHash ?? DUMMY_HASH))
    return matches ? user : undefined
  }
}

/** Reads and validates a users file; the error names the file and what is wrong. */
export function loadUsersFile (path: string): UserRecord[] {
  let data: unknown
  try {
    data = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new Error(`USERS_FILE ${path}: ${String(error)}`)
  }
  const problem = UsersFile.Errors(data).First()
  if (problem !== undefined) {
    throw new Error(`USERS_FILE ${path}: ${problem.path || '/'} ${problem.message}; expected an array of { id, username, passwordHash }`)
  }
  return UsersFile.Decode(data)
}
