import { Type, type Static } from '@sinclair/typebox'

export const LoginBody = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 128 }),
  password: Type.String({ minLength: 1, maxLength: 1024 })
}, {
  $id: 'LoginRequest',
  // Extra fields are removed by the validator; the OpenAPI document leaves this keyword out.
  additionalProperties: false,
  description: 'Credentials; other fields are accepted and ignored',
  examples: [{ username: 'john', password: 'changeme' }]
})
export type LoginBody = Static<typeof LoginBody>

export const LoginReply = Type.Object({
  access_token: Type.String({ description: 'Signed JWT (HS256)' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Lifetime of the token in seconds' })
}, { $id: 'LoginResponse', description: 'An access token for the Authorization header (`Bearer <token>`)' })
export type LoginReply = Static<typeof LoginReply>

export const UserId = Type.Union([Type.Integer(), Type.String({ minLength: 1 })], { description: 'The user id (the token\'s sub)' })
export type UserId = Static<typeof UserId>

/** Claims the service signs into every access token. */
export const TokenClaims = Type.Object({
  sub: UserId,
  username: Type.String({ minLength: 1 })
})
export type TokenClaims = Static<typeof TokenClaims>

/** What the guard checks of a verified token before it asks who the user is. */
export const VerifiedClaims = Type.Composite([TokenClaims, Type.Object({ iat: Type.Integer(), exp: Type.Integer() })])
export type VerifiedClaims = Static<typeof VerifiedClaims>

/** The authenticated identity attached to a request and returned by GET /profile. */
export const Identity = Type.Object({
  userId: UserId,
  username: Type.String()
}, { $id: 'Identity', description: 'The user the access token was issued to' })
export type Identity = Static<typeof Identity>
