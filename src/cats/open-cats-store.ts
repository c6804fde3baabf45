import type { Config } from '../config.js'
import type { Database } from '../db/database.js'
import type { CatsStore, StoreLimits } from './cats-store.js'
import { MemoryCatsStore } from './memory-cats-store.js'

/** The store's limits, from the settings. */
export function storeLimits (config: Config): StoreLimits {
  return {
    maxCats: config.CATS_MAX,
    maxCatBytes: config.BODY_LIMIT,
    idempotencyKeys: {
      maxKeys: config.IDEMPOTENCY_KEYS_MAX,
      maxBytes: config.IDEMPOTENCY_KEYS_MAX_BYTES,
      clientMaxKeys: config.IDEMPOTENCY_CLIENT_KEYS_MAX,
      clientMaxBytes: config.IDEMPOTENCY_CLIENT_KEYS_MAX_BYTES
    }
  }
}

/** The cats in the database when there is one (its store loaded only then), else in memory. */
export async function openCatsStore (config: Config, database: Database | undefined): Promise<CatsStore> {
  if (database === undefined) return new MemoryCatsStore(storeLimits(config))
  const { SqlCatsStore } = await import('./sql-cats-store.js')
  return new SqlCatsStore(database.client, storeLimits(config), { availability: database.status, schema: database.schema })
}
