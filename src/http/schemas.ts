import { Type, type Static } from '@sinclair/typebox'

export const ValidationIssue = Type.Object({
  field: Type.String({ description: 'Where the value is, e.g. body.age or params.id' }),
  message: Type.String({ description: 'Why it was rejected' })
})
export type ValidationIssue = Static<typeof ValidationIssue>

/** The one error shape of the service. */
export const ErrorReply = Type.Object({
  statusCode: Type.Integer({ examples: [400] }),
  error: Type.String({ description: 'HTTP reason phrase', examples: ['Bad Request'] }),
  message: Type.String(),
  code: Type.String({ description: 'Stable error code (see the README)', examples: ['FST_ERR_VALIDATION'] }),
  validation: Type.Optional(Type.Array(ValidationIssue, { description: 'One entry for every failing field' }))
}, { title: 'ErrorReply' })
export type ErrorReply = Static<typeof ErrorReply>

/** OpenAPI security requirement of the routes behind the token guard. */
export const BEARER_SECURITY = [{ bearerAuth: [] }]
