import type { Registry } from 'prom-client'
import type { ConfigInput } from './config.js'
import type { UserRecord } from './auth/users-file.js'
import type { IsRevoked, ValidateToken } from './auth/token-claims.js'

/** What the service plugin accepts: the app, its plugins and its routes all read these. */
export interface AppOptions {
  /** The settings of the service, with the same keys and rules as the environment (see README). */
  config: ConfigInput
  /** Accounts that may log in; when absent, USERS_FILE or the demo users are used. */
  users?: readonly UserRecord[]
  /** Replaces the check that turns verified token claims into the request's identity. */
  validateToken?: ValidateToken
  /**
   * A revocation check of the host's, in addition to the service's own denylist
   * (logout, reused refresh tokens): true refuses the token.
   */
  isRevoked?: IsRevoked
  /**
   * Collects the service's Prometheus metrics on this registry; the owner of the
   * registry serves it. Without it no metric is collected.
   */
  metrics?: { registry: Registry }
}
