import fp from 'fastify-plugin'
import swagger, { type SwaggerTransform } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { AppOptions } from '../../src/app-options.js'
import { BEARER_SCHEME, BEARER_SCHEME_NAME, forHostDocument } from '../../src/http/host-openapi.js'
import {
  documentParams, documentRequestBodies, documentRequiredHeader, ownComponentName, withoutHostSchemas
} from '../../src/http/openapi-document.js'
import { serviceDecorator } from '../../src/service-scope.js'

const WRITES = new Set(['PUT', 'PATCH', 'DELETE'])

/** OpenAPI 3.1 built from the route schemas; JSON at /docs/json, UI at /docs unless DOCS_ENABLED=false. */
export default fp<AppOptions>(async (fastify, opts) => {
  // CATS_IF_MATCH=required: writes to a cat answer 428 without If-Match, so the document requires it.
  const config = serviceDecorator(fastify, 'catsConfig')
  const ifMatchRequired = config.CATS_IF_MATCH === 'required'
  const info = {
    title: 'Cats API',
    description: 'Log in for a bearer token, read your profile, and manage a collection of cats.',
    version: '1.0.0',
    license: { name: 'MIT', identifier: 'MIT' }
  }
  const hideFromHostDocument = opts.hideFromHostDocument === true

  // A host's own @fastify/swagger collects the service's routes too, and a route's own transform is the one every
  // document applies to it (before a swagger's `transform`): the service's operations read the same in both
  // documents, whatever the host's transform does, except what only the host's needs (see forHostDocument).
  const swaggerTransform: SwaggerTransform = ({ schema, url, route, ...document }) => {
    const documented = documentParams(schema)
    const write = [route.method].flat().some((method) => WRITES.has(method))
    const operation = ifMatchRequired && write ? documentRequiredHeader(documented, 'if-match') : documented
    // @fastify/swagger puts the `info` object of its options in the document it builds: this one is only in the service's.
    if ('openapiObject' in document && document.openapiObject.info === info) return { schema: operation, url }
    return { schema: forHostDocument(operation, document, hideFromHostDocument), url }
  }
  fastify.addHook('onRoute', (route) => {
    route.config = { ...route.config, swaggerTransform }
  })

  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info,
      // Relative to where the document is served: the prefix a host registers the service under, if any.
      servers: [{ url: fastify.prefix === '' ? '/' : fastify.prefix, description: 'This server' }],
      tags: [
        { name: 'auth', description: 'Access tokens' },
        { name: 'profile', description: 'The authenticated user' },
        { name: 'cats', description: 'The cat collection' },
        { name: 'health', description: 'Liveness and readiness probes' }
      ],
      components: {
        securitySchemes: {
          [BEARER_SCHEME_NAME]: BEARER_SCHEME
        }
      }
    },
    // Components are named after the shared schemas' $id without its namespace (Cat, StoredCat, Error, ...).
    refResolver: { buildLocalReference: ownComponentName },
    transformObject: (documentObject) => {
      withoutHostSchemas(documentObject)
      return documentRequestBodies(documentObject)
    }
  })
  if (config.DOCS_ENABLED) {
    await fastify.register(swaggerUi, {
      routePrefix: '/docs',
      // The page at /docs (no trailing slash) links its assets by absolute path; without the
      // prefix a host registered the service under, they would point outside it.
      indexPrefix: fastify.prefix,
      // The UI's own CSP (same-origin scripts, the hashes of its inline code) replaces the API's on /docs.
      staticCSP: true,
      // Without the top bar: it only offers to explore another document's URL, and its logo is an
      // inline SVG with a <style> element that the CSP refuses.
      uiConfig: { layout: 'BaseLayout' }
    })
  }
}, { name: 'swagger' })
