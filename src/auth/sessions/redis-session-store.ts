import type { Result, ClientContext } from 'ioredis'
import type { AcknowledgedWrites, RedisClient } from '../../redis-connection.js'
import type { DependencyStatus } from '../../dependency-status.js'
import type { UserId } from '../schemas.js'
import {
  DEFAULT_ENDED_KEEP_MS, SKEW_MARGIN_MS, sessionStoreCall, type RefreshLimit, type Rotation, type SessionRecord, type SessionStore, type StartOutcome
} from './session-store.js'
import { userKey } from '../user-key.js'

// A session is one hash, which Redis deletes a margin after its last token expires; each user has a sorted set of
// their session ids by creation, kept as long as their latest session. Each operation is one script, so rotations
// and ends of a session never interleave.
//
// In a Redis Cluster, a script's keys must all be in one slot: a user's set and session hashes are all under the
// user's hash tag (`<prefix>{u:<userKey>}session:<id>`, `<prefix>{u:<userKey>}user-sessions`), so one user's
// sessions live on one node. START and USER_SESSIONS are passed the user's set and session prefix and build the
// hash keys of the set's members inside the script, under that same tag (the set is read in the script, not
// before it, so that a login's cap check and its write stay one atomic step without an extra round trip): every
// key they touch hashes to the slot of their KEYS, which Redis Cluster accepts. ROTATE and END are passed every key
// they touch. On one server (REDIS_URL) the keys stay as they always were, untagged.

/** Ends the session of key KEYS[1] (when not ended yet), keeping it until ARGV[1] at most, plus the margin ARGV[2]. */
const END_SESSION = `
local function endSession(key, keepUntil, margin)
  local exp = tonumber(redis.call('HGET', key, 'exp'))
  if not exp or redis.call('HGET', key, 'ended') == '1' then return false end
  exp = math.min(exp, keepUntil)
  redis.call('HSET', key, 'ended', 1, 'exp', exp)
  redis.call('PEXPIREAT', key, exp + margin)
  return true
end
-- Keeps the user's set at least until the given time.
local function keepSet(key, untilMs)
  local current = redis.call('PEXPIRETIME', key)
  if current >= 0 and current < untilMs then redis.call('PEXPIREAT', key, untilMs) end
end
`

/**
 * KEYS: the session, the user's set. ARGV: the session's fields (id, user, username, created, address, user agent,
 * expiry), the cap, the prefix of session keys, how long an ended session is kept, the margin, then the ids denied
 * already. Ends the live sessions beyond the cap once each is among those denied: answers 'started' and the ids it
 * ended; otherwise writes nothing and answers 'undenied' and the ids that were not.
 */
const START = `${END_SESSION}
local margin = tonumber(ARGV[11])
local live = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local key = ARGV[9] .. id
  if redis.call('EXISTS', key) == 0 or redis.call('HGET', key, 'ended') == '1' then
    redis.call('ZREM', KEYS[2], id)
  else
    table.insert(live, id)
  end
end
local denied = {}
for i = 12, #ARGV do denied[ARGV[i]] = true end
local over, undenied = {}, {'undenied'}
for i = 1, #live - (tonumber(ARGV[8]) - 1) do
  table.insert(over, live[i])
  if not denied[live[i]] then table.insert(undenied, live[i]) end
end
if #undenied > 1 then return undenied end
redis.call('HSET', KEYS[1], 'user', ARGV[2], 'username', ARGV[3], 'gen', 0, 'rot', 0, 'created', ARGV[4], 'last', ARGV[4],
  'address', ARGV[5], 'ua', ARGV[6], 'exp', ARGV[7], 'ws', 0, 'wc', 0, 'ended', 0)
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[7]) + margin)
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
if redis.call('PEXPIRETIME', KEYS[2]) == -1 then redis.call('PEXPIREAT', KEYS[2], tonumber(ARGV[7]) + margin) end
keepSet(KEYS[2], tonumber(ARGV[7]) + margin)
local ended = {'started'}
for _, id in ipairs(over) do
  endSession(ARGV[9] .. id, tonumber(ARGV[4]) + tonumber(ARGV[10]), margin)
  redis.call('ZREM', KEYS[2], id)
  table.insert(ended, id)
end
return ended
`

/** The fields of a session as the scripts answer them, after its id. */
const FIELDS = ['user', 'username', 'gen', 'created', 'last', 'address', 'ua', 'exp', 'ws', 'wc', 'rot'] as const

/**
 * KEYS: the session and, when the caller knows it, the user's set. ARGV: the generation presented, now, the next
 * token's expiry, the limit's most refreshes and window, how long an ended session is kept, the margin, the prefix
 * of the users' sets (for the set's key when it is not in KEYS: one server only), the reuse window. The same rule as
 * decideRotation in rotation.ts.
 */
const ROTATE = `${END_SESSION}
local s = redis.call('HMGET', KEYS[1], 'gen', 'exp', 'ws', 'wc', 'ended', 'user', 'rot')
local presented, now, margin = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[7])
if not s[1] then return {'refused'} end
local gen, exp, ws, wc = tonumber(s[1]), tonumber(s[2]), tonumber(s[3]), tonumber(s[4])
if exp <= now then return {'refused'} end
if s[5] == '1' then return {'ended'} end
if presented > gen then return {'refused'} end
local rot = tonumber(s[7]) or 0
local repeated = presented == gen - 1 and now - rot < tonumber(ARGV[9])
if presented < gen and not repeated then
  endSession(KEYS[1], now + tonumber(ARGV[6]), margin)
  return {'reused'}
end
local max, windowMs = tonumber(ARGV[4]), tonumber(ARGV[5])
if now - ws >= windowMs then
  ws = now
  wc = 1
elseif wc >= max then
  return {'limited', tostring(ws + windowMs - now)}
else
  wc = wc + 1
end
local fields = {${FIELDS.map((field) => `'${field}'`).join(', ')}}
if repeated then
  redis.call('HSET', KEYS[1], 'last', now, 'ws', ws, 'wc', wc)
  return {'repeated', unpack(redis.call('HMGET', KEYS[1], unpack(fields)))}
end
redis.call('HSET', KEYS[1], 'gen', gen + 1, 'rot', now, 'last', now, 'exp', ARGV[3], 'ws', ws, 'wc', wc)
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[3]) + margin)
keepSet(KEYS[2] or (ARGV[8] .. s[6]), tonumber(ARGV[3]) + margin)
return {'rotated', unpack(redis.call('HMGET', KEYS[1], unpack(fields)))}
`

/**
 * KEYS: the session. ARGV: how long an ended session is kept from now, the margin. A session ended already is marked
 * again: a write that replicas receive, so that a `WAIT` after it (REDIS_WAIT_REPLICAS) counts every earlier write of
 * the master, the first end included, whichever connection made it.
 */
const END = `${END_SESSION}
if not endSession(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])) and redis.call('HGET', KEYS[1], 'ended') == '1' then
  redis.call('HSET', KEYS[1], 'ended', 1)
end
`

/**
 * KEYS: the user's set. ARGV: the prefix of session keys, now, then what to do: 'list'; or 'end', how long an ended
 * session is kept from now, the margin and the ids to end. Walks the user's live sessions oldest first: 'list'
 * answers each as its id and FIELDS, 'end' ends those among the ids (answering their ids), and sets the set's expiry
 * again even when it ended none: a write that replicas receive, so that a `WAIT` after it (REDIS_WAIT_REPLICAS) counts
 * every earlier write of the master, such as the end a retried request's first attempt wrote.
 */
const USER_SESSIONS = `${END_SESSION}
local prefix, now, action = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local wanted = {}
if action == 'end' then
  for i = 6, #ARGV do wanted[ARGV[i]] = true end
end
local answer = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local s = redis.call('HMGET', prefix .. id, 'ended', 'exp')
  if s[1] == '0' and tonumber(s[2]) > now then
    if action == 'list' then
      table.insert(answer, {id, unpack(redis.call('HMGET', prefix .. id, ${FIELDS.map((field) => `'${field}'`).join(', ')}))})
    elseif wanted[id] then
      endSession(prefix .. id, now + tonumber(ARGV[4]), tonumber(ARGV[5]))
      redis.call('ZREM', KEYS[1], id)
      table.insert(answer, id)
    end
  end
end
if action == 'end' then
  local at = redis.call('PEXPIRETIME', KEYS[1])
  if at > 0 then redis.call('PEXPIREAT', KEYS[1], at) end
end
return answer
`

declare module 'ioredis' {
  // The scripts above, as defineCommand adds them to the client.
  interface RedisCommander<Context extends ClientContext> {
    sessionStart: (session: string, userSessions: string, ...args: Array<string | number>) => Result<string[], Context>
    sessionRotate: (numberOfKeys: number, ...keysAndArgs: Array<string | number>) => Result<string[], Context>
    sessionEnd: (session: string, ...args: Array<string | number>) => Result<unknown, Context>
    userSessions: (userSessions: string, ...args: Array<string | number>) => Result<unknown[], Context>
  }
}

/** A live session from its id and its FIELDS as a script answers them. */
function recordOf (id: string, [user, username, generation, created, lastUsed, address, userAgent, expires, windowStart, windowCount, rotated]: string[]): SessionRecord {
  const userId: UserId = JSON.parse(user)
  return {
    id,
    userId,
    username,
    generation: Number(generation),
    rotatedMs: Number(rotated),
    createdMs: Number(created),
    lastUsedMs: Number(lastUsed),
    address,
    userAgent,
    expiresMs: Number(expires),
    windowStartMs: Number(windowStart),
    windowCount: Number(windowCount),
    ended: false
  }
}

/** Adds the scripts to a client (with EVALSHA, and the whole script only when Redis does not have it yet). */
function defineScripts (redis: RedisClient): void {
  redis.defineCommand('sessionStart', { numberOfKeys: 2, lua: START })
  redis.defineCommand('sessionRotate', { lua: ROTATE })
  redis.defineCommand('sessionEnd', { numberOfKeys: 1, lua: END })
  redis.defineCommand('userSessions', { numberOfKeys: 1, lua: USER_SESSIONS })
}

/**
 * Sessions in Redis, shared by every instance. With REDIS_WAIT_REPLICAS, the ends a client asks for (`endSession`,
 * `endSessions`) go through the acknowledged writes and wait for the replicas; the ends a login's cap or a reused refresh
 * token makes are not waited for (their denials are).
 */
export class RedisSessionStore implements SessionStore {
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #status: DependencyStatus
  readonly #endedKeepMs: number
  readonly #cluster: boolean
  readonly #acknowledged: AcknowledgedWrites | undefined

  /**
   * `cluster`: the client is a Redis Cluster's, and every user's keys go under the user's hash tag; `acknowledged`:
   * the writes that wait for REDIS_WAIT_REPLICAS.
   */
  constructor (
    redis: RedisClient, keyPrefix: string, status: DependencyStatus, endedKeepMs = DEFAULT_ENDED_KEEP_MS, cluster = false, acknowledged?: AcknowledgedWrites
  ) {
    defineScripts(redis)
    acknowledged?.define(defineScripts)
    this.#redis = redis
    this.#prefix = keyPrefix
    this.#status = status
    this.#endedKeepMs = endedKeepMs
    this.#cluster = cluster
    this.#acknowledged = acknowledged
  }

  async start (session: SessionRecord, maxPerUser: number, denied: readonly string[] = []): Promise<StartOutcome> {
    const user = userKey(session.userId)
    const [outcome, ...ids] = await sessionStoreCall(this.#status, () => this.#redis.sessionStart(
      this.#sessionKey(user, session.id), this.#userSetKey(user),
      session.id, user, session.username, session.createdMs, session.address, session.userAgent,
      session.expiresMs, maxPerUser, this.#sessionKey(user, ''), this.#endedKeepMs, SKEW_MARGIN_MS, ...denied
    ))
    return outcome === 'started' ? { started: true, ended: ids } : { started: false, undenied: ids }
  }

  async rotate (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit, user?: string): Promise<Rotation> {
    // In a cluster, a token without its user's key names no session of this store: none was ever issued for one.
    if (this.#cluster && user === undefined) return { outcome: 'refused' }
    const owner = user ?? ''
    const keys = this.#cluster ? [this.#sessionKey(owner, id), this.#userSetKey(owner)] : [this.#sessionKey(owner, id)]
    const [outcome, ...fields] = await sessionStoreCall(this.#status, () => this.#redis.sessionRotate(
      keys.length, ...keys, presented, nowMs, nextExpiresMs, limit.max, limit.windowMs, this.#endedKeepMs, SKEW_MARGIN_MS,
      this.#userSetKey(''), limit.reuseWindowMs
    ))
    if (outcome === 'reused' || outcome === 'ended') return { outcome }
    if (outcome === 'limited') return { outcome, retryAfterMs: Number(fields[0]) }
    if (outcome !== 'rotated' && outcome !== 'repeated') return { outcome: 'refused' }
    return { outcome, session: recordOf(id, fields) }
  }

  async endSession (id: string, user?: string): Promise<void> {
    // Every caller of the service knows the session's user; without it a cluster's session cannot be found.
    if (this.#cluster && user === undefined) throw new Error('A session in a Redis Cluster is ended with its user\'s key')
    // The user's set forgets the id at that user's next login. Ending an ended session changes nothing, but with
    // REDIS_WAIT_REPLICAS its retry still waits for the replicas.
    const key = this.#sessionKey(user ?? '', id)
    await this.#write(key, (client) => client.sessionEnd(key, Date.now() + this.#endedKeepMs, SKEW_MARGIN_MS))
  }

  async list (userId: UserId, nowMs: number): Promise<SessionRecord[]> {
    const user = userKey(userId)
    const sessions = await sessionStoreCall(this.#status, () => this.#redis.userSessions(this.#userSetKey(user), this.#sessionKey(user, ''), nowMs, 'list'))
    return (sessions as string[][]).map(([id, ...fields]) => recordOf(id, fields))
  }

  async endSessions (userId: UserId, ids: readonly string[], nowMs: number): Promise<string[]> {
    const user = userKey(userId)
    const key = this.#userSetKey(user)
    const ended = await this.#write(key, (client) => client.userSessions(key, this.#sessionKey(user, ''), nowMs, 'end', this.#endedKeepMs, SKEW_MARGIN_MS, ...ids))
    return ended as string[]
  }

  /** A write of an end: on the service's client, or, with REDIS_WAIT_REPLICAS, acknowledged by the replicas. */
  async #write<T> (key: string, write: (client: RedisClient) => Promise<T>): Promise<T> {
    const acknowledged = this.#acknowledged
    return await sessionStoreCall(this.#status, () => acknowledged === undefined ? write(this.#redis) : acknowledged.write(key, write))
  }

  // The client belongs to the service's redis plugin, which closes it.
  async close (): Promise<void> {}

  // On one server, a session's key does not name its user (a refresh token of the form before the user's key was
  // added finds its session); in a cluster, every key of a user is under the user's hash tag.
  #sessionKey (user: string, id: string): string {
    return this.#cluster ? `${this.#prefix}{u:${user}}session:${id}` : `${this.#prefix}session:${id}`
  }

  /** The user's set; on one server, with `''`, the prefix of every user's set. */
  #userSetKey (user: string): string {
    return this.#cluster ? `${this.#prefix}{u:${user}}user-sessions` : `${this.#prefix}user-sessions:${user}`
  }
}
