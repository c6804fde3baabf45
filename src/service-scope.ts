import type { FastifyInstance } from 'fastify'
import type { Config } from './config.js'
import type { TokenKeys } from './auth/tokens/token-keys.js'
import type { DependencyStatus } from './dependency-status.js'
import type { Database } from './db/database.js'
import type { RedisConnection } from './redis-connection.js'
import type { ServiceMetrics } from './metrics/service-metrics.js'
import type { Accounts } from './auth/login/users.js'
import type { CatsStore } from './cats/cats-store.js'
import type { LoginProtection } from './auth/login/login-protection.js'
import type { Sessions } from './auth/sessions/sessions.js'
import type { TokenGuard } from './auth/tokens/token-guard.js'

/**
 * What the service decorates its own encapsulated scope with. Every name starts with `cats`, so that none shadows a
 * host's own decorator (`config`, `users`, `redis`, `authenticate`…) for the host's hooks that run on the service's
 * routes; and the types live here rather than in Fastify's interfaces, which belong to the host.
 */
export interface ServiceDecorators {
  /** The settings, validated once at start (src/app.ts). */
  catsConfig: Config
  /** The keys that sign and verify access tokens. */
  catsTokenKeys: TokenKeys
  /** The external services the routes need, by name; readiness probes each of them. */
  catsDependencies: Map<string, DependencyStatus>
  /** The database when DATABASE_URL is set (cats, sessions), else undefined. */
  catsDatabase: Database | undefined
  /** Redis when REDIS_URL or REDIS_CLUSTER_NODES is set (login counters, the denylist, sessions without a database), else undefined. */
  catsRedis: RedisConnection | undefined
  /** The service's metrics when the app was given a registry; undefined otherwise, and nothing is measured. */
  catsMetrics: ServiceMetrics | undefined
  /** The accounts that may log in. */
  catsUsers: Accounts
  /** The cats: in the database when there is one, else in memory. */
  catsStore: CatsStore
  /** Counts failed logins, locks out repeated ones and queues logins for a hash slot (routes/auth/login.ts). */
  catsLoginProtection: LoginProtection
  /** Login sessions, refresh tokens, logout and the denylist the token guard consults. */
  catsSessions: Sessions
  /** The token guard (see TokenGuard), for a route's onRequest. */
  catsAuthenticate: TokenGuard
  /**
   * The logout's guard: catsAuthenticate, or with REDIS_WAIT_REPLICAS one that lets a token of a denied session through
   * (the route then ends only that session), so that a logout answered 503 after its denial reached the master, but
   * not its replicas, is written and waited for again by its retry.
   */
  catsLogoutGuard: TokenGuard
}

export type ServiceDecorator = keyof ServiceDecorators

/** A decorator of the service's scope, typed. Read once where a plugin or route is registered, not per request. */
export function serviceDecorator<Name extends ServiceDecorator> (fastify: FastifyInstance, name: Name): ServiceDecorators[Name] {
  // Not fastify.getDecorator: it binds functions to the instance, and the guard must stay the same function.
  if (!fastify.hasDecorator(name)) throw new Error(`the service's ${name} is not decorated yet`)
  return (fastify as FastifyInstance & ServiceDecorators)[name]
}

/** Decorates the service's scope with one of its own names, type-checked against ServiceDecorators. */
export function decorateService<Name extends ServiceDecorator> (fastify: FastifyInstance, name: Name, value: ServiceDecorators[Name]): void {
  // The value's type is checked by this function's signature; Fastify's own generic cannot relate it to a name.
  fastify.decorate<unknown>(name, value)
}
