import { IncomingMessage, ServerResponse, type OutgoingHttpHeaders } from 'node:http'
import { Socket } from 'node:net'
import helmet from 'helmet'

/**
 * The headers OWASP's REST security cheat sheet lists for an API, computed by
 * helmet: a CSP that lets a JSON response load and frame nothing, HSTS, nosniff,
 * DENY framing, and no referrer. Helmet's legacy headers for old browsers
 * rendering HTML are left out: every header costs CPU on every response. The
 * /docs UI sends its own CSP (see plugins/swagger.ts).
 */
export function apiSecurityHeaders (): OutgoingHttpHeaders {
  const response = new ServerResponse(new IncomingMessage(new Socket()))
  helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginOpenerPolicy: false,
    frameguard: { action: 'deny' },
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false
  })(response.req, response, () => {})
  return response.getHeaders()
}
