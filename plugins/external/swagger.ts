import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { documentParams, documentRequestBodies, documentRequiredHeader } from '../../src/http/openapi-document.js'
import { serviceDecorator } from '../../src/service-scope.js'

const WRITES = new Set(['PUT', 'PATCH', 'DELETE'])

/** OpenAPI 3.1 built from the route schemas; JSON at /docs/json, UI at /docs unless DOCS_ENABLED=false. */
export default fp(async (fastify) => {
  // CATS_IF_MATCH=required: writes to a cat answer 428 without If-Match, so the document requires it.
  const config = serviceDecorator(fastify, 'catsConfig')
  const ifMatchRequired = config.CATS_IF_MATCH === 'required'
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Cats API',
        description: 'Log in for a bearer token, read your profile, and manage a collection of cats.',
        version: '1.0.0',
        license: { name: 'MIT', identifier: 'MIT' }
      },
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
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }
        }
      }
    },
    // Components are named after the shared schemas' $id (Cat, StoredCat, Error, ...); addSchema requires one.
    refResolver: { buildLocalReference: (json) => String(json.$id) },
    transform: ({ schema, url, route }) => {
      const documented = documentParams(schema)
      const write = [route.method].flat().some((method) => WRITES.has(method))
      return { schema: ifMatchRequired && write ? documentRequiredHeader(documented, 'if-match') : documented, url }
    },
    transformObject: documentRequestBodies
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
