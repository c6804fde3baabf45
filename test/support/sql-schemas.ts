import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Test } from 'tap'
import type { SqlClient } from '../../src/db/sql-client.js'

/** A schema name no other test file or run uses. */
export const freshSchemaName = (prefix: string): string => `${prefix}_${randomBytes(6).toString('hex')}`

/**
 * A fresh schema on one shared PGlite session for the length of a test: the
 * session's search_path points at it, and it is dropped on teardown.
 */
export async function freshSchemaOn (t: Test, shared: SqlClient, prefix: string): Promise<SqlClient> {
  const schema = freshSchemaName(prefix)
  await shared.query(`CREATE SCHEMA ${schema}`)
  await shared.query(`SET search_path TO ${schema}`)
  t.teardown(async () => {
    await shared.query('SET search_path TO public')
    await shared.query(`DROP SCHEMA ${schema} CASCADE`)
  })
  return shared
}

/** The server URL with every connection's search_path set to the schema, and any other settings given. */
export function urlWithSchema (databaseUrl: string, schema: string, settings: Record<string, string> = {}): string {
  const url = new URL(databaseUrl)
  const options = Object.entries({ search_path: schema, ...settings }).map(([name, value]) => `-c ${name}=${value}`)
  url.searchParams.set('options', options.join(' '))
  return url.href
}

/** A client of the PostgreSQL server for a test's own statements (creating and dropping schemas), ended on teardown. */
export async function adminClient (t: Test, databaseUrl: string): Promise<pg.Client> {
  const admin = new pg.Client(databaseUrl)
  await admin.connect()
  t.teardown(() => admin.end())
  return admin
}

/**
 * A fresh schema on the PostgreSQL server, created by `admin` and dropped on the
 * test's teardown. Teardowns run last first, so whatever the test opens on the
 * schema afterwards is closed before the drop.
 */
export async function freshServerSchema (t: Test, admin: pg.Client, prefix: string): Promise<string> {
  const schema = freshSchemaName(prefix)
  await admin.query(`CREATE SCHEMA ${schema}`)
  t.teardown(async () => {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  })
  return schema
}
