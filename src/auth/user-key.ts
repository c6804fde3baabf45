import type { UserId } from './schemas.js'

/**
 * A user's key in every per-user scope (sessions, idempotency keys and their quota): the id as JSON, so the number
 * 1 and the string "1" are two users. Session records have always been kept under this form.
 */
export const userKey = (userId: UserId): string => JSON.stringify(userId)
