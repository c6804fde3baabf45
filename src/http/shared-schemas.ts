import { CreateCatBody, CatReply, DeleteReply, StoredCat } from '../cats/schemas.js'
import { Identity, LoginBody, LoginReply } from '../auth/schemas.js'
import { ErrorReply, ValidationIssue } from './schemas.js'

/**
 * The schemas routes reference by `$id`: registered once with `fastify.addSchema`
 * (for serializers and the OpenAPI components) and added to the validators.
 */
export const sharedSchemas = [
  ValidationIssue, ErrorReply, CreateCatBody, CatReply, StoredCat, DeleteReply, LoginBody, LoginReply, Identity
]
