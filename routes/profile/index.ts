import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Identity } from '../../src/auth/schemas.js'
import { BEARER_SECURITY, ref } from '../../src/http/schemas.js'
import { overloaded, unauthorized } from '../../src/http/error-response-schemas.js'
import { serviceDecorator } from '../../src/service-scope.js'
import { verifiedOf } from '../../src/auth/tokens/token-guard.js'

const profile: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    onRequest: serviceDecorator(fastify, 'catsAuthenticate'),
    schema: {
      tags: ['profile'],
      operationId: 'getProfile',
      summary: 'The identity carried by the access token',
      security: BEARER_SECURITY,
      response: { 200: ref(Identity, { description: 'The user the token was issued to' }), 401: unauthorized, 503: overloaded }
    }
  }, (request) => verifiedOf(request).identity)
}

export default profile
