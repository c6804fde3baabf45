import { loadDatabaseConfig } from '../config.js'
import { connect } from '../db/sql-client.js'
import { migrate, migrationStatus, type MigrationStatus } from '../db/migrations.js'

// `migrate` applies the pending migrations to DATABASE_URL, in DATABASE_SCHEMA (the server also does this at start-up);
// `migrate status` lists every migration, applied (and when) or pending, and changes nothing.
const USAGE = 'Usage: npm run migrate [-- status]'

function describe ({ version, name, appliedAt, known }: MigrationStatus): string {
  const state = appliedAt === undefined ? 'pending' : `applied ${appliedAt.toISOString()}`
  return `${String(version).padStart(3, '0').padEnd(7)}  ${name.padEnd(20)}  ${state}${known ? '' : '  (not in this release)'}`
}

const command = process.argv.slice(2)
if (command.length > 1 || (command.length === 1 && command[0] !== 'status')) {
  console.error(USAGE)
  process.exit(1)
}
const { DATABASE_URL, DATABASE_SCHEMA, DATABASE_POOLER } = loadDatabaseConfig(process.env, { envFile: '.env' })
if (DATABASE_URL === undefined) {
  console.error('DATABASE_URL is not set: nothing to migrate (cats are kept in memory)')
  process.exit(1)
}
const client = await connect(DATABASE_URL, { pooled: DATABASE_POOLER !== 'none' })
try {
  if (command[0] === 'status') {
    console.log(`version  ${'name'.padEnd(20)}  state`)
    for (const migration of await migrationStatus(client, DATABASE_SCHEMA)) console.log(describe(migration))
  } else {
    for (const { version, name } of await migrate(client, 'max', DATABASE_SCHEMA)) console.log(`Applied ${String(version).padStart(3, '0')} ${name}`)
    console.log('The cats schema is up to date')
  }
} catch (error) {
  console.error(`Migration failed: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
} finally {
  await client.close()
}
