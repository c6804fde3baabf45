import fp from 'fastify-plugin'
import { loginProtectionFor } from '../../src/auth/login/login-protection.js'
import { decorateService, serviceDecorator } from '../../src/service-scope.js'

export default fp(async (fastify) => {
  decorateService(fastify, 'catsLoginProtection', loginProtectionFor(serviceDecorator(fastify, 'catsConfig'), serviceDecorator(fastify, 'catsRedis')))
}, { name: 'login-protection', dependencies: ['redis'] })
