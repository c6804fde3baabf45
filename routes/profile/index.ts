import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Identity } from '../../src/auth/schemas.js'
import { BEARER_SECURITY, ErrorReply } from '../../src/http/schemas.js'

const profile: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    onRequest: fastify.authenticate,
    schema: {
      tags: ['profile'],
      summary: 'The identity carried by the access token',
      security: BEARER_SECURITY,
      response: { 200: Identity, 401: ErrorReply }
    }
  }, async (request) => request.user)
}

export default profile
