import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { NO_SECURITY } from '../../src/http/schemas.js'
import { PublicKey } from '../../src/auth/tokens/token-keys.js'
import { serviceDecorator } from '../../src/service-scope.js'

const KeySet = Type.Object({ keys: Type.Array(PublicKey) }, {
  description: 'The public keys that verify this service\'s tokens: the signing key first, then the verify-only keys (empty with HS256 alone)',
  examples: [{ keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k', alg: 'EdDSA', use: 'sig' }] }]
})

// Verifiers cache the set; five minutes is how early a next key must be published before it signs.
const CACHE_CONTROL = 'public, max-age=300'

const wellKnown: FastifyPluginAsyncTypebox = async (fastify) => {
  const keySet = { keys: serviceDecorator(fastify, 'catsTokenKeys').published }
  fastify.get('/jwks.json', {
    schema: {
      tags: ['auth'],
      operationId: 'getJwks',
      summary: 'The public keys (JWKS) that verify access tokens, for services that check them without the secret',
      security: NO_SECURITY,
      response: { 200: KeySet }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', CACHE_CONTROL)
    return keySet
  })
}

export default wellKnown
// Served at /.well-known/jwks.json (RFC 8615), not under the folder's name.
export const autoPrefix = '/.well-known'
