import type { ConfigInput } from './config.js'
import type { UserRecord } from './auth/login/users-file.js'
import type { UserDirectory } from './auth/login/users.js'
import type { IsRevoked, ValidateToken } from './auth/tokens/token-claims.js'

/** What the service plugin accepts: the app, its plugins and its routes all read these. */
export interface AppOptions {
  /** The settings of the service, with the same keys and rules as the environment (see README). */
  config: ConfigInput
  /**
   * Accounts that may log in: a fixed list, or the host's own lookup (read per login and per guarded request);
   * when absent, USERS_FILE or the demo users are used.
   */
  users?: readonly UserRecord[] | UserDirectory
  /** Replaces the check that turns verified token claims into the request's identity. */
  validateToken?: ValidateToken
  /**
   * A revocation check of the host's, in addition to the service's own denylist
   * (logout, reused refresh tokens): true refuses the token.
   */
  isRevoked?: IsRevoked
  /**
   * Collects the service's Prometheus metrics on this registry (a prom-client `Registry`; the
   * prom-client package must then be installed); the owner of the registry serves it. Without it
   * no metric is collected.
   */
  metrics?: { registry: MetricsRegistry }
  /**
   * Leaves the service's routes out of the OpenAPI document of a host's own @fastify/swagger; the service's
   * own document (`/docs/json` under its prefix) keeps them. Default false: the host's document shows them.
   */
  hideFromHostDocument?: boolean
}

/**
 * What the service needs of a metrics registry: prom-client's `Registry` is one. Declared here, so that
 * the package's types do not need prom-client's, which a host without metrics does not install.
 */
export interface MetricsRegistry {
  // A method, not a property: prom-client's registerMetric takes its own Metric type, and a method's
  // parameters are compared both ways, so its Registry fits without this package naming that type.
  /** Adds one of the service's metrics (prom-client ones) to the registry. */
  registerMetric (metric: RegisteredMetric): void
}

/** A metric as a registry reads it when scraped. */
interface RegisteredMetric {
  get: () => Promise<unknown>
}
