import { SCHEMA_NAMESPACE } from './schemas.js'

/**
 * The service's operations in two OpenAPI documents: its own (under its prefix, `/docs/json`) and the one
 * of a host app with its own @fastify/swagger, which collects every route of every scope below it, the
 * service's included. Declared here without @fastify/swagger's types: those would add its declarations
 * to Fastify's interfaces in every host that imports the package.
 */

/** The bearer scheme of the guarded routes, as the service's own document names it. */
export const BEARER_SCHEME_NAME = 'bearerAuth'

/** The same scheme in a host's document: a host may have a `bearerAuth` of its own, for other tokens. */
export const HOST_BEARER_SCHEME_NAME = `${SCHEMA_NAMESPACE}${BEARER_SCHEME_NAME}`

/** How a client sends the service's access tokens. */
export const BEARER_SCHEME = { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } as const

/**
 * The security schemes the service's operations need in a host's OpenAPI document, for the host to merge into
 * its @fastify/swagger's `openapi.components.securitySchemes`. Without them the service adds them to the host's
 * document itself (see `forHostDocument`); passing them keeps the document's options complete.
 */
export const openapiSecuritySchemes = {
  [HOST_BEARER_SCHEME_NAME]: { ...BEARER_SCHEME, description: 'An access token of the cats service, from its POST /auth/login' }
} as const

/** A schema as @fastify/swagger's reference resolver hands it over. */
export interface ReferencedSchema { [key: string]: unknown }

/** @fastify/swagger's `refResolver.buildLocalReference`: the component name of a schema with an `$id`. */
export type BuildLocalReference<Json extends ReferencedSchema = ReferencedSchema, BaseUri = unknown, Fragment = unknown> =
  (json: Json, baseUri: BaseUri, fragment: Fragment, i: number) => string

/** @fastify/swagger's own naming, for a host that has none: `def-0`, `def-1`, …, titled by their `$id`. */
const swaggerDefaultReference: BuildLocalReference = (json, _baseUri, _fragment, i) => {
  if (json.title === undefined && json.$id !== undefined) json.title = json.$id
  return `def-${i}`
}

/** Whether `$id` is one of the service's shared schemas. */
export const isServiceSchemaId = (id: unknown): id is string => typeof id === 'string' && id.startsWith(SCHEMA_NAMESPACE)

/**
 * The `refResolver` for a host's @fastify/swagger: the service's schemas keep their `$id` as component name
 * (`cats-auth-service.StoredCat`: readable, and apart from the host's own `StoredCat` if it has one); every
 * other schema is named by the host's `buildLocalReference`, or @fastify/swagger's default without one.
 */
export function openapiRefResolver<Json extends ReferencedSchema = ReferencedSchema, BaseUri = unknown, Fragment = unknown> (
  host: { buildLocalReference: BuildLocalReference<Json, BaseUri, Fragment> } = { buildLocalReference: swaggerDefaultReference }
): { buildLocalReference: BuildLocalReference<Json, BaseUri, Fragment> } {
  return {
    buildLocalReference: (json, baseUri, fragment, i) =>
      isServiceSchemaId(json.$id) ? json.$id : host.buildLocalReference(json, baseUri, fragment, i)
  }
}

/** An operation's schema, as far as a document's transform reads and changes it. */
export interface OperationSchema {
  hide?: boolean
  security?: ReadonlyArray<Record<string, readonly string[]>>
  response?: unknown
}

type Components = Record<string, object>

/** What a route's transform receives of the document being built: OpenAPI 3, or Swagger 2. */
export type DocumentObject =
  | { openapiObject: { components?: { schemas?: Components, securitySchemes?: Record<string, unknown> } } }
  | { swaggerObject: { definitions?: Components, securityDefinitions?: Record<string, unknown> } }

/**
 * What the 4XX of an operation that documents no client error says in a host's document (the host's linter asks
 * for one): the hooks of a host's root scope run on the service's routes too.
 */
const HOST_CLIENT_ERROR = {
  type: 'null',
  description: 'Never sent by the service for this operation; the host app\'s own hooks (a rate limit, its authentication) may answer one'
}

/**
 * A service operation as a host's document shows it, or hides it when `hide`. Its security names the service's
 * scheme as `openapiSecuritySchemes` does, and that scheme is added to the document when the host did not pass
 * it: @fastify/swagger looks each scheme of an operation up in the document's own and fails (500 on the host's
 * document) on a name it lacks. A route's transform runs just before its operation is added, so the scheme is
 * there in time.
 */
export function forHostDocument<S extends OperationSchema> (schema: S, document: DocumentObject, hide: boolean): S {
  if (hide) {
    removeServiceComponents(document)
    // `hide` leaves a route out of every swagger's document, whatever its hiddenTag or hideUntagged.
    return { ...schema, hide: true }
  }
  const security = schema.security?.map((requirement) => Object.fromEntries(Object.entries(requirement)
    .map(([name, scopes]) => [name === BEARER_SCHEME_NAME ? HOST_BEARER_SCHEME_NAME : name, scopes])))
  if (security?.some((requirement) => HOST_BEARER_SCHEME_NAME in requirement) === true) addBearerScheme(document)
  return { ...schema, security, response: withClientError(schema.response) }
}

/** Responses by status, with a 4XX when they have no client error. */
function withClientError (response: unknown): unknown {
  if (typeof response !== 'object' || response === null || Object.keys(response).some((status) => status.startsWith('4'))) return response
  return { ...response, '4XX': HOST_CLIENT_ERROR }
}

/**
 * With the routes hidden, nothing in the host's document references the service's schemas, which
 * @fastify/swagger emits anyway: named by `openapiRefResolver`, or titled by their `$id` by its default naming.
 */
function removeServiceComponents (document: DocumentObject): void {
  const components = 'openapiObject' in document ? document.openapiObject.components?.schemas : document.swaggerObject.definitions
  for (const [name, component] of Object.entries(components ?? {})) {
    if (isServiceSchemaId(name) || ('title' in component && isServiceSchemaId(component.title))) delete components?.[name]
  }
}

/** The host's own objects are replaced, never changed: they may be the options the host gave its swagger. */
function addBearerScheme (document: DocumentObject): void {
  if ('openapiObject' in document) {
    const components = document.openapiObject.components ??= {}
    if (components.securitySchemes?.[HOST_BEARER_SCHEME_NAME] !== undefined) return
    components.securitySchemes = { ...components.securitySchemes, ...openapiSecuritySchemes }
  } else {
    const { swaggerObject } = document
    if (swaggerObject.securityDefinitions?.[HOST_BEARER_SCHEME_NAME] !== undefined) return
    // Swagger 2 has no bearer scheme: the token goes in the Authorization header as `Bearer <token>`.
    swaggerObject.securityDefinitions = {
      ...swaggerObject.securityDefinitions,
      [HOST_BEARER_SCHEME_NAME]: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'Bearer <an access token of the cats service>' }
    }
  }
}
