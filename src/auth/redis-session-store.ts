import type { Redis, Result, ClientContext } from 'ioredis'
import type { DependencyStatus } from '../dependency-status.js'
import type { UserId } from './schemas.js'
import { guarded } from './session-errors.js'
import { SKEW_MARGIN_MS, userKey, type RefreshLimit, type Rotation, type SessionRecord, type SessionStore } from './session-store.js'

// A session is one hash, which Redis deletes a margin after its last token expires; each user has a sorted set of
// their session ids by creation. Each operation is one script, so rotations and ends of a session never interleave.

/**
 * KEYS: the session, the user's set. ARGV: the session's fields (id, user, username, created, address, user agent,
 * expiry), the time Redis deletes it, the cap, the prefix of session keys. Answers the ids of the sessions it ended.
 */
const START = `
redis.call('HSET', KEYS[1], 'user', ARGV[2], 'username', ARGV[3], 'gen', 0, 'created', ARGV[4], 'last', ARGV[4],
  'address', ARGV[5], 'ua', ARGV[6], 'exp', ARGV[7], 'ws', 0, 'wc', 0)
redis.call('PEXPIREAT', KEYS[1], ARGV[8])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
local live = {}
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[10] .. id) == 1 then table.insert(live, id) else redis.call('ZREM', KEYS[2], id) end
end
local ended = {}
for i = 1, #live - tonumber(ARGV[9]) do
  redis.call('DEL', ARGV[10] .. live[i])
  redis.call('ZREM', KEYS[2], live[i])
  table.insert(ended, live[i])
end
return ended
`

/**
 * KEYS: the session. ARGV: the generation presented, now, the next token's expiry, the time Redis deletes the
 * session then, the limit's most refreshes and window. The same rule as decideRotation in session-store.ts.
 */
const ROTATE = `
local s = redis.call('HMGET', KEYS[1], 'gen', 'exp', 'ws', 'wc')
local presented, now = tonumber(ARGV[1]), tonumber(ARGV[2])
if not s[1] then return {'refused'} end
local gen, exp, ws, wc = tonumber(s[1]), tonumber(s[2]), tonumber(s[3]), tonumber(s[4])
if exp <= now or presented > gen then return {'refused'} end
if presented < gen then
  redis.call('DEL', KEYS[1])
  return {'reused'}
end
local max, windowMs = tonumber(ARGV[5]), tonumber(ARGV[6])
if now - ws >= windowMs then
  ws = now
  wc = 1
elseif wc >= max then
  return {'limited', tostring(ws + windowMs - now)}
else
  wc = wc + 1
end
redis.call('HSET', KEYS[1], 'gen', gen + 1, 'last', now, 'exp', ARGV[3], 'ws', ws, 'wc', wc)
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return {'rotated', unpack(redis.call('HMGET', KEYS[1], 'user', 'username', 'gen', 'created', 'last', 'address', 'ua', 'exp', 'ws', 'wc'))}
`

declare module 'ioredis' {
  // The scripts above, as defineCommand adds them to the client.
  interface RedisCommander<Context extends ClientContext> {
    sessionStart: (session: string, userSessions: string, ...args: Array<string | number>) => Result<string[], Context>
    sessionRotate: (session: string, ...args: Array<string | number>) => Result<string[], Context>
  }
}

/** Sessions in Redis, shared by every instance. */
export class RedisSessionStore implements SessionStore {
  readonly #redis: Redis
  readonly #prefix: string
  readonly #status: DependencyStatus

  constructor (redis: Redis, keyPrefix: string, status: DependencyStatus) {
    // Sent with EVALSHA, and the whole script only when Redis does not have it yet.
    redis.defineCommand('sessionStart', { numberOfKeys: 2, lua: START })
    redis.defineCommand('sessionRotate', { numberOfKeys: 1, lua: ROTATE })
    this.#redis = redis
    this.#prefix = keyPrefix
    this.#status = status
  }

  async start (session: SessionRecord, maxPerUser: number): Promise<string[]> {
    return guarded(this.#status, () => this.#redis.sessionStart(
      this.#sessionKey(session.id), `${this.#prefix}user-sessions:${userKey(session.userId)}`,
      session.id, userKey(session.userId), session.username, session.createdMs, session.address, session.userAgent,
      session.expiresMs, session.expiresMs + SKEW_MARGIN_MS, maxPerUser, this.#sessionKey('')
    ))
  }

  async rotate (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit): Promise<Rotation> {
    const [outcome, ...fields] = await guarded(this.#status, () => this.#redis.sessionRotate(
      this.#sessionKey(id), presented, nowMs, nextExpiresMs, nextExpiresMs + SKEW_MARGIN_MS, limit.max, limit.windowMs
    ))
    if (outcome === 'reused') return { outcome }
    if (outcome === 'limited') return { outcome, retryAfterMs: Number(fields[0]) }
    if (outcome !== 'rotated') return { outcome: 'refused' }
    const [user, username, generation, created, lastUsed, address, userAgent, expires, windowStart, windowCount] = fields
    const userId: UserId = JSON.parse(user)
    return {
      outcome,
      session: {
        id,
        userId,
        username,
        generation: Number(generation),
        createdMs: Number(created),
        lastUsedMs: Number(lastUsed),
        address,
        userAgent,
        expiresMs: Number(expires),
        windowStartMs: Number(windowStart),
        windowCount: Number(windowCount)
      }
    }
  }

  async end (id: string): Promise<void> {
    // The user's set forgets the id at that user's next login.
    await guarded(this.#status, () => this.#redis.del(this.#sessionKey(id)))
  }

  // The client belongs to the service's redis plugin, which closes it.
  async close (): Promise<void> {}

  #sessionKey (id: string): string {
    return `${this.#prefix}session:${id}`
  }
}
