import type { UserId } from '../schemas.js'
import { parseHash, verifyPassword, type DeriveKey } from './password.js'
import type { UserRecord } from './users-file.js'
import type { HashQueue } from './hash-queue.js'
import { AccountsUnavailable } from '../../errors.js'
import { hostAnswer, type MaybePromise } from '../../maybe-promise.js'
import { inChildSpan, SpanKind, type SpanStart } from '../../tracing/spans.js'

// Verified when a username is unknown, so that case costs as much as a wrong password.
const DUMMY_HASH = '$scrypt$ln=14,r=8,p=5$6MYwn4R6aYi+BUlQScO3UA$cq0/cC9zh6nSSFp+7Vvt2UhnQYZN+Rt39D3ejUJdzGE'

// A login's wait for its hash: the time in the queue and the verification (on a worker thread for scrypt).
const HASH_SPAN: SpanStart = { name: 'password hash', kind: SpanKind.INTERNAL, attributes: {} }
const hashSpan = (): SpanStart => HASH_SPAN

/** What the login route, the guard and refresh ask of the accounts, whoever keeps them. */
export interface Accounts {
  /** The account with this id, if there still is one. */
  findById: (id: UserId) => MaybePromise<UserRecord | undefined>
  /**
   * Resolves to the user when the password matches; takes as long for an unknown username.
   * When `signal` aborts before the hash starts (the client went away), the hash is skipped and the call rejects.
   */
  verifyCredentials: (username: string, password: string, signal?: AbortSignal) => Promise<UserRecord | undefined>
}

/**
 * A host's own accounts (the `users` option as a lookup): read per login, so a changed password or a new account
 * counts at once, and per guarded request and refresh by id, so a deleted account's tokens stop at once.
 */
export interface UserDirectory {
  /** The account of this username, or undefined. */
  findByUsername: (username: string) => UserRecord | undefined | PromiseLike<UserRecord | undefined>
  /** The account of this id, or undefined. */
  findById: (id: UserId) => UserRecord | undefined | PromiseLike<UserRecord | undefined>
  /** Checks a password against an account's `passwordHash` in the host's format; without it, hashes are scrypt PHC strings. */
  verifyPassword?: (password: string, passwordHash: string) => boolean | PromiseLike<boolean>
  /**
   * A hash in the host's format and parameters, verified for unknown usernames so that they take as long as known
   * ones. Without it, the hash of the last account found is used (before any, the service's own scrypt hash).
   */
  dummyPasswordHash?: string
}

/** The accounts of a fixed list (the `users` option as an array, USERS_FILE, or the demo users). */
export class UserStore implements Accounts {
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

  async verifyCredentials (username: string, password: string, signal?: AbortSignal): Promise<UserRecord | undefined> {
    const user = this.#byUsername.get(username)
    const matches = await inChildSpan(hashSpan, () =>
      this.#hashQueue.run(() => verifyPassword(password, user?.passwordHash ?? DUMMY_HASH, this.#deriveKey), signal))
    return matches ? user : undefined
  }
}

/** A host's lookup as the service's accounts: its failures answer 503 AUTH_ERR_ACCOUNTS_UNAVAILABLE, never a 500. */
export class DirectoryUsers implements Accounts {
  readonly #directory: UserDirectory
  readonly #hashQueue: HashQueue
  readonly #verify: (password: string, passwordHash: string) => Promise<boolean>
  #dummyHash: string

  constructor (directory: UserDirectory, hashQueue: HashQueue, deriveKey: DeriveKey) {
    this.#directory = directory
    this.#hashQueue = hashQueue
    const { verifyPassword: hostVerify } = directory
    this.#verify = hostVerify === undefined
      ? async (password, passwordHash) => await verifyPassword(password, passwordHash, deriveKey)
      : async (password, passwordHash) => await hostVerify(password, passwordHash) === true
    this.#dummyHash = directory.dummyPasswordHash ?? DUMMY_HASH
  }

  findById (id: UserId): MaybePromise<UserRecord | undefined> {
    return this.#ask(() => this.#directory.findById(id))
  }

  async verifyCredentials (username: string, password: string, signal?: AbortSignal): Promise<UserRecord | undefined> {
    const user = await this.#ask(() => this.#directory.findByUsername(username))
    // An unknown username is checked against a hash of the host's own kind, so it takes the time of a known one.
    if (user !== undefined && this.#directory.dummyPasswordHash === undefined) this.#dummyHash = user.passwordHash
    const passwordHash = user?.passwordHash ?? this.#dummyHash
    const matches = await inChildSpan(hashSpan, () => this.#hashQueue.run(async () => {
      try {
        return await this.#verify(password, passwordHash)
      } catch (cause) {
        throw new AccountsUnavailable({ cause })
      }
    }, signal))
    return matches && user !== undefined ? user : undefined
  }

  /** A lookup of the host's; a throw or a rejection becomes the 503 of unreadable accounts. */
  #ask (lookup: () => UserRecord | undefined | PromiseLike<UserRecord | undefined>): MaybePromise<UserRecord | undefined> {
    let answer: MaybePromise<UserRecord | undefined>
    try {
      answer = hostAnswer(lookup())
    } catch (cause) {
      throw new AccountsUnavailable({ cause })
    }
    return answer instanceof Promise ? answer.catch((cause: unknown) => { throw new AccountsUnavailable({ cause }) }) : answer
  }
}
