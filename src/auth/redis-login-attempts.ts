import type { ClientContext, Redis, Result } from 'ioredis'
import { pairKey, type Admission, type LoginAttempt, type LoginAttemptStore, type LoginPolicy } from './login-attempts.js'

// The rules of MemoryLoginAttempts, run inside Redis so that every instance's
// check-and-count is one atomic step: of attempts fired at once on several
// instances, exactly as many are admitted as the limits allow. Time is Redis's
// own clock, so instances with skewed clocks still agree.
// KEYS: the pair's hash, the client's counter. ARGV: the policy.
// Returns {0, 0} when admitted, {1, ms} when the pair is locked, {2, ms} when the client is over its cap.
const ADMIT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local maxFailures, windowMs, lockMs, lockMaxMs = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local clientMax, clientWindowMs = tonumber(ARGV[5]), tonumber(ARGV[6])
local clientFailures = tonumber(redis.call('GET', KEYS[2]) or '0')
if clientFailures > clientMax then
  return {2, redis.call('PTTL', KEYS[2])}
end
local state = redis.call('HMGET', KEYS[1], 'failures', 'windowEndsAt', 'lockMs', 'lockedUntil')
local failures = tonumber(state[1]) or 0
local windowEndsAt = tonumber(state[2]) or (now + windowMs)
local lock = tonumber(state[3]) or 0
local lockedUntil = tonumber(state[4]) or 0
if lockedUntil > now then
  lock = math.min(lock * 2, lockMaxMs)
  redis.call('HSET', KEYS[1], 'lockMs', lock, 'lockedUntil', now + lock)
  redis.call('PEXPIRE', KEYS[1], lock + windowMs)
  return {1, lock}
end
failures = failures + 1
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
if redis.call('INCR', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], clientWindowMs)
end
return {0, 0}
`

// KEYS: the pair's hash, the client's counter. The counter keeps its expiry.
const SUCCEEDED = `
redis.call('DEL', KEYS[1])
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then
  redis.call('DECR', KEYS[2])
end
return 0
`

declare module 'ioredis' {
  // The scripts above, as defineCommand adds them to the client.
  interface RedisCommander<Context extends ClientContext> {
    loginAdmit: (pair: string, client: string, ...policy: number[]) => Result<[verdict: number, retryAfterMs: number], Context>
    loginSucceeded: (pair: string, client: string) => Result<number, Context>
  }
}

/** The counters in Redis, shared by every instance; commands fail (and the login answers 503) when Redis does not answer. */
export class RedisLoginAttempts implements LoginAttemptStore {
  readonly #redis: Redis
  readonly #prefix: string
  readonly #policy: number[]

  constructor (redis: Redis, keyPrefix: string, policy: LoginPolicy) {
    // Sent with EVALSHA, and the whole script only when Redis does not have it yet.
    redis.defineCommand('loginAdmit', { numberOfKeys: 2, lua: ADMIT })
    redis.defineCommand('loginSucceeded', { numberOfKeys: 2, lua: SUCCEEDED })
    this.#redis = redis
    this.#prefix = `${keyPrefix}login:`
    this.#policy = [policy.maxFailures, policy.windowMs, policy.lockMs, policy.lockMaxMs, policy.clientMaxFailures, policy.clientWindowMs]
  }

  async admit (attempt: LoginAttempt): Promise<Admission> {
    const [verdict, retryAfterMs] = await this.#redis.loginAdmit(...this.#keys(attempt), ...this.#policy)
    if (verdict === 0) return { admitted: true }
    return { admitted: false, reason: verdict === 1 ? 'locked' : 'client', retryAfterMs }
  }

  async succeeded (attempt: LoginAttempt): Promise<void> {
    await this.#redis.loginSucceeded(...this.#keys(attempt))
  }

  #keys ({ username, client }: LoginAttempt): [string, string] {
    return [`${this.#prefix}pair:${pairKey(username, client)}`, `${this.#prefix}client:${client}`]
  }
}
