import fp from 'fastify-plugin'
import { loginProtectionFor, type LoginProtection } from '../../src/auth/login-protection.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts failed logins, locks out repeated ones and queues logins for a hash slot (routes/auth/login.ts). */
    loginProtection: LoginProtection
  }
}

export default fp(async (fastify) => {
  fastify.decorate('loginProtection', loginProtectionFor(fastify.config, fastify.redis))
}, { name: 'login-protection', dependencies: ['redis'] })
