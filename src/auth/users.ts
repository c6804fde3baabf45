import type { UserId } from './schemas.js'
import { parseHash, verifyPassword, type DeriveKey } from './password.js'
import type { UserRecord } from './users-file.js'
import type { HashQueue } from './hash-queue.js'
import { inChildSpan, SpanKind, type SpanStart } from '../tracing/spans.js'

// Verified when a username is unknown, so that case costs as much as a wrong password.
const DUMMY_HASH = '$scrypt$ln=14,r=8,p=5$6MYwn4R6aYi+BUlQScO3UA$cq0/cC9zh6nSSFp+7Vvt2UhnQYZN+Rt39D3ejUJdzGE'

// A login's wait for its hash: the time in the queue and the scrypt derivation on a worker thread.
const HASH_SPAN: SpanStart = { name: 'password hash', kind: SpanKind.INTERNAL, attributes: {} }
const hashSpan = (): SpanStart => HASH_SPAN

export class UserStore {
  readonly #byUsername = new Map<string, UserRecord>()
  readonly #byId = new Map<UserId, UserRecord>()
  readonly #hashQueue: HashQueue
  readonly #deriveKey: DeriveKey

  /** Throws when ids or usernames repeat or a hash is not a valid scrypt string. */
  constructor (users: readonly UserRecord[], hashQueue: HashQueue, deriveKey: DeriveKey) {
    for (const user of users) {
      if (this.#byId.has(user.id)) throw new Error(`duplicate user id ${JSON.stringify(user.id)}`)
      if (this.#byUsername.has(user.username)) throw new Error(`duplicate username "${user.username}"`)
      if (parseHash(user.passwordHash) === undefined) throw new Error(`user "${user.username}" has an invalid passwordHash`)
      this.#byId.set(user.id, user)
      this.#byUsername.set(user.username, user)
    }
    this.#hashQueue = hashQueue
    this.#deriveKey = deriveKey
  }

  findById (id: UserId): UserRecord | undefined {
    return this.#byId.get(id)
  }

  /**
   * Resolves to the user when the password matches; takes as long for an unknown username.
   * When `signal` aborts before the hash starts (the client went away), the hash is skipped and the call rejects.
   */
  async verifyCredentials (username: string, password: string, signal?: AbortSignal): Promise<UserRecord | undefined> {
    const user = this.#byUsername.get(username)
    const matches = await inChildSpan(hashSpan, () =>
      this.#hashQueue.run(() => verifyPassword(password, user?.passwordHash ?? DUMMY_HASH, this.#deriveKey), signal))
    return matches ? user : undefined
  }
}
