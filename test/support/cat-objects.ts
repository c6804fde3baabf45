import type { CatsStore } from '../../src/cats/cats-store.js'
import type { CreateCatBody, StoredCat, UpdateCatBody } from '../../src/cats/schemas.js'

/** What the tests compare: the cats a store answers, parsed from the JSON texts it keeps. */
export interface CatObjects {
  list: () => Promise<StoredCat[]>
  findCat: (id: number) => Promise<StoredCat | undefined>
  create: (fields: CreateCatBody) => Promise<StoredCat>
  updateCat: (id: number, fields: UpdateCatBody) => Promise<StoredCat | undefined>
}

const parsed = (json: string | undefined): StoredCat | undefined => json === undefined ? undefined : JSON.parse(json)

/** The store with its cats also read and written as objects, through the store's own methods. */
export function withObjects<S extends CatsStore> (store: S): S & CatObjects {
  const objects: CatObjects = {
    list: async () => JSON.parse(`[${(await store.page(0, Number.MAX_SAFE_INTEGER)).items}]`),
    findCat: async (id) => parsed((await store.find(id))?.json),
    create: async (fields) => JSON.parse(await store.createJson(fields)),
    updateCat: async (id, fields) => parsed((await store.update(id, fields))?.json)
  }
  return new Proxy(store, {
    get (target, key) {
      if (Object.hasOwn(objects, key)) return objects[key as keyof CatObjects]
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  }) as S & CatObjects
}
