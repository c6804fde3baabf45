import type { ClientContext, Result } from 'ioredis'
import type { RedisClient } from '../../redis-connection.js'
import { pairKey, type Admission, type LoginAttempt, type LoginAttemptStore, type LoginPolicy, type Outcome } from './login-lockout.js'

// The rules of MemoryLoginAttempts, run inside Redis so that every instance's
// check-and-take-a-slot is one atomic step: of attempts fired at once on
// several instances, no more are checked than the limits allow. Time is
// Redis's own clock, so instances with skewed clocks still agree.
// KEYS (both scripts): the pair's hash, the pair's attempts in progress (a
// sorted set of attempt ids by lease end), the client's failure counter, the
// client's attempts in progress. ARGV: the attempt id, then the policy.
// In a Redis Cluster the four keys are under the client's hash tag
// (`<prefix>login:{c:<client>}…`), so each script's keys share one slot.

// A slot is held until the attempt is settled, or until its lease ends if the
// instance holding it died first; a login never takes this long.
const DEFAULT_LEASE_MS = 60_000

// Returns {0, 0} when admitted, {1, ms} when the pair is locked, {2, ms} when
// the client is over its cap, {3, 0} when the slots are all taken.
const ADMIT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local id, maxFailures, windowMs, lockMs, lockMaxMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local clientMax, leaseMs = tonumber(ARGV[6]), tonumber(ARGV[8])
local clientFailures = tonumber(redis.call('GET', KEYS[3]) or '0')
if clientFailures > clientMax then
  return {2, redis.call('PTTL', KEYS[3])}
end
local state = redis.call('HMGET', KEYS[1], 'failures', 'lockMs', 'lockedUntil')
local failures = tonumber(state[1]) or 0
local lock = tonumber(state[2]) or 0
if (tonumber(state[3]) or 0) > now then
  -- An attempt while locked cannot be checked; it counts as one more failure.
  lock = math.min(lock * 2, lockMaxMs)
  redis.call('HSET', KEYS[1], 'lockMs', lock, 'lockedUntil', now + lock)
  redis.call('PEXPIRE', KEYS[1], lock + windowMs)
  return {1, lock}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= math.max(1, maxFailures - failures) or clientFailures + redis.call('ZCARD', KEYS[4]) > clientMax then
  return {3, 0}
end
for _, key in ipairs({KEYS[2], KEYS[4]}) do
  redis.call('ZADD', key, now + leaseMs, id)
  redis.call('PEXPIRE', key, leaseMs)
end
return {0, 0}
`

// ARGV: the attempt id, the outcome (0 unchecked, 1 failed, 2 succeeded), then the policy.
const SETTLE = `
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if ARGV[2] == '2' then
  redis.call('DEL', KEYS[1])
end
if ARGV[2] ~= '1' then
  return 0
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local maxFailures, windowMs, lockMs, lockMaxMs = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local clientWindowMs = tonumber(ARGV[8])
local state = redis.call('HMGET', KEYS[1], 'failures', 'windowEndsAt', 'lockMs')
local failures = (tonumber(state[1]) or 0) + 1
local windowEndsAt = tonumber(state[2]) or (now + windowMs)
local lock = tonumber(state[3]) or 0
local lockedUntil = 0
if failures >= maxFailures then
  if lock == 0 then lock = lockMs else lock = math.min(lock * 2, lockMaxMs) end
  lockedUntil = now + lock
end
redis.call('HSET', KEYS[1], 'failures', failures, 'windowEndsAt', windowEndsAt, 'lockMs', lock, 'lockedUntil', lockedUntil)
if lock == 0 then
  redis.call('PEXPIRE', KEYS[1], windowEndsAt - now)
else
  redis.call('PEXPIRE', KEYS[1], lockedUntil + windowMs - now)
end
if redis.call('INCR', KEYS[3]) == 1 then
  redis.call('PEXPIRE', KEYS[3], clientWindowMs)
end
return 0
`

const OUTCOMES: Record<Outcome, number> = { unchecked: 0, failed: 1, succeeded: 2 }

declare module 'ioredis' {
  // The scripts above, as defineCommand adds them to the client.
  interface RedisCommander<Context extends ClientContext> {
    loginAdmit: (pair: string, pairInProgress: string, client: string, clientInProgress: string,
      id: string, ...policy: number[]) => Result<[verdict: number, retryAfterMs: number], Context>
    loginSettle: (pair: string, pairInProgress: string, client: string, clientInProgress: string,
      id: string, outcome: number, ...policy: number[]) => Result<number, Context>
  }
}

/** The counters in Redis, shared by every instance; commands fail (and the login answers 503) when Redis does not answer. */
export class RedisLoginAttempts implements LoginAttemptStore {
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #policy: number[]
  readonly #cluster: boolean

  /** `leaseMs`: how long a slot outlives an instance that died while holding it; `cluster`: the client is a Redis Cluster's. */
  constructor (redis: RedisClient, keyPrefix: string, policy: LoginPolicy, leaseMs = DEFAULT_LEASE_MS, cluster = false) {
    // Sent with EVALSHA, and the whole script only when Redis does not have it yet.
    redis.defineCommand('loginAdmit', { numberOfKeys: 4, lua: ADMIT })
    redis.defineCommand('loginSettle', { numberOfKeys: 4, lua: SETTLE })
    this.#redis = redis
    this.#prefix = `${keyPrefix}login:`
    this.#policy = [policy.maxFailures, policy.windowMs, policy.lockMs, policy.lockMaxMs, policy.clientMaxFailures, policy.clientWindowMs, leaseMs]
    this.#cluster = cluster
  }

  async admit (attempt: LoginAttempt): Promise<Admission> {
    const [verdict, retryAfterMs] = await this.#redis.loginAdmit(...this.#keys(attempt), attempt.id, ...this.#policy)
    if (verdict === 0) return { admitted: true }
    if (verdict === 3) return { admitted: false, reason: 'busy' }
    return { admitted: false, reason: verdict === 1 ? 'locked' : 'client', retryAfterMs }
  }

  async settle (attempt: LoginAttempt, outcome: Outcome): Promise<void> {
    await this.#redis.loginSettle(...this.#keys(attempt), attempt.id, OUTCOMES[outcome], ...this.#policy)
  }

  #keys ({ username, client }: LoginAttempt): [string, string, string, string] {
    const pair = pairKey(username, client)
    const prefix = this.#cluster ? `${this.#prefix}{c:${client}}` : this.#prefix
    return [`${prefix}pair:${pair}`, `${prefix}pair-in-progress:${pair}`, `${prefix}client:${client}`, `${prefix}client-in-progress:${client}`]
  }
}
