import { loadDatabaseConfig } from '../config.js'
import { connect } from '../cats/sql-client.js'
import { migrate } from '../cats/sql-cats-store.js'

// Creates the cats schema in DATABASE_URL (the server also does this at start-up; it is idempotent).
const { DATABASE_URL } = loadDatabaseConfig(process.env)
if (DATABASE_URL === undefined) {
  console.error('DATABASE_URL is not set: nothing to migrate (cats are kept in memory)')
  process.exit(1)
}
const client = await connect(DATABASE_URL)
await migrate(client)
await client.close()
console.log('The cats schema is up to date')
