import { readFileSync } from 'node:fs'
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { UserId } from '../schemas.js'

export const UserRecord = Type.Object({
  id: UserId,
  username: Type.String({ minLength: 1, maxLength: 128 }),
  passwordHash: Type.String({ description: 'scrypt PHC string from npm run hash-password' })
})
export type UserRecord = Static<typeof UserRecord>

const UsersFile = TypeCompiler.Compile(Type.Array(UserRecord))

/** Reads and validates a users file; the error names the file and what is wrong. */
export function loadUsersFile (path: string): UserRecord[] {
  let data: unknown
  try {
    data = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new Error(`USERS_FILE ${path}: ${String(error)}`)
  }
  const problem = UsersFile.Errors(data).First()
  if (problem !== undefined) {
    throw new Error(`USERS_FILE ${path}: ${problem.path || '/'} ${problem.message}; expected an array of { id, username, passwordHash }`)
  }
  return UsersFile.Decode(data)
}
