import { Type, type Static } from '@sinclair/typebox'
import { schemaId } from '../http/schemas.js'

export const LoginBody = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 128 }),
  password: Type.String({ minLength: 1, maxLength: 1024 })
}, {
  $id: schemaId('LoginRequest'),
  // Extra fields are removed by the validator; the OpenAPI document leaves this keyword out.
  additionalProperties: false,
  description: 'Credentials; other fields are accepted and ignored',
  examples: [{ username: 'john', password: 'changeme' }]
})
export type LoginBody = Static<typeof LoginBody>

export const LoginReply = Type.Object({
  access_token: Type.String({ description: 'Signed JWT (HS256)' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Lifetime of the token in seconds' }),
  refresh_token: Type.Optional(Type.String({
    description: 'Only with refresh tokens on: an opaque token for `POST /auth/refresh`, good for one use'
  }))
}, { $id: schemaId('LoginResponse'), description: 'An access token for the Authorization header (`Bearer <token>`)' })
export type LoginReply = Static<typeof LoginReply>

/** A refresh token, as login and refresh hand it out (checked for its exact form by the session service: a wrong one is a 401, not a 400). */
export const RefreshBody = Type.Object({
  refresh_token: Type.String({ minLength: 1, maxLength: 1024 })
}, { additionalProperties: false, examples: [{ refresh_token: 'q3v6Zq0Xy6W1aQm4b2X9cT8sV5nL7kP0jH3gF1dS4eA' }] })
export type RefreshBody = Static<typeof RefreshBody>

/** A fresh access token and the refresh token that replaces the one presented. */
export const RefreshReply = Type.Composite([
  Type.Omit(LoginReply, ['refresh_token']),
  Type.Object({ refresh_token: Type.String({ description: 'The next refresh token; the one presented no longer works' }) })
], {
  examples: [{
    access_token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOjEsInVzZXJuYW1lIjoiam9obiJ9.signature',
    token_type: 'Bearer',
    expires_in: 3600,
    refresh_token: 'Vb1x0Jm6n8Qw2Zr4Tk7Yp3Hs9Lc5Df1Ga6Ue8Io0Pq2'
  }]
})
export type RefreshReply = Static<typeof RefreshReply>

export type LogoutScope = 'local' | 'others' | 'global'

/** POST /auth/logout's scope: this session, the user's other sessions, or all of them (an enum: one validation issue, not one per word). */
export const LogoutQuery = Type.Object({
  scope: Type.Optional(Type.Unsafe<LogoutScope>({
    type: 'string',
    enum: ['local', 'others', 'global'],
    default: 'local',
    description: '`local` ends the token\'s session; `others` every other session of its user; `global` all of them'
  }))
})

/** One live session as its user sees it. */
export const SessionView = Type.Object({
  id: Type.String({ description: 'The session\'s id (the `sid` of its tokens), for `DELETE /auth/sessions/{id}`' }),
  created: Type.String({ format: 'date-time', description: 'The login' }),
  lastUsed: Type.String({ format: 'date-time', description: 'The login or the latest refresh' }),
  address: Type.String({ description: 'The client address at login' }),
  userAgent: Type.String({ maxLength: 256, description: 'The User-Agent at login, at most 256 characters' }),
  current: Type.Boolean({ description: 'Whether this is the session of the token that asked' })
})
export type SessionView = Static<typeof SessionView>

export const SessionList = Type.Array(SessionView, {
  description: 'The caller\'s live sessions, oldest first',
  examples: [[
    { id: '2f1c9e3a-6b7d-4e8f-9a0b-1c2d3e4f5a6b', created: '2026-11-27T09:12:03.000Z', lastUsed: '2026-11-27T10:40:51.000Z', address: '203.0.113.7', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/132.0', current: true },
    { id: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d', created: '2026-11-26T18:02:44.000Z', lastUsed: '2026-11-26T18:02:44.000Z', address: '198.51.100.23', userAgent: 'curl/8.5.0', current: false }
  ]]
})

export const UserId = Type.Union([Type.Integer(), Type.String({ minLength: 1 })], { description: 'The user id (the token\'s sub)' })
export type UserId = Static<typeof UserId>

const RandomId = Type.String({ minLength: 1, maxLength: 64 })

/** Claims the service signs into every access token. */
export const TokenClaims = Type.Object({
  sub: UserId,
  username: Type.String({ minLength: 1 }),
  /** This token's own id: logout denies it. */
  jti: RandomId,
  /** The session (one login and every token refreshed from it): reuse of a refresh token or logout ends it all. */
  sid: RandomId
})
export type TokenClaims = Static<typeof TokenClaims>

/** What the guard checks of a verified token before it asks who the user is. */
export const VerifiedClaims = Type.Composite([TokenClaims, Type.Object({ iat: Type.Integer(), exp: Type.Integer() })])
export type VerifiedClaims = Static<typeof VerifiedClaims>

/** The authenticated identity attached to a request and returned by GET /profile. */
export const Identity = Type.Object({
  userId: UserId,
  username: Type.String()
}, { $id: schemaId('Identity'), description: 'The user the access token was issued to' })
export type Identity = Static<typeof Identity>
