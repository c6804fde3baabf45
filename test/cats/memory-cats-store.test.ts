import t from 'tap'
import { withObjects, type CatObjects } from '../support/cat-objects.js'
import { MemoryCatsStore } from '../../src/cats/memory-cats-store.js'
import type { StoredCat } from '../../src/cats/schemas.js'

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const kit = { name: 'Kit', age: 1, breed: 'Persian' }
const max = { name: 'Max', age: 7, breed: 'Bengal' }

type Cats = MemoryCatsStore & CatObjects

/** A repository holding `count` cats named cat1..catN, ids 1..N. */
async function repositoryWith (count: number): Promise<Cats> {
  const cats = withObjects(new MemoryCatsStore())
  for (let i = 1; i <= count; i++) await cats.create({ name: `cat${i}`, age: i, breed: 'Mixed' })
  return cats
}

const names = async (cats: Cats): Promise<unknown[]> => (await cats.list()).map((cat) => cat.name)

const TOM_JSON = '{"id":1,"name":"Tom","age":3,"breed":"Siamese"}'

t.test('create copies only name, age and breed from its input', async (t) => {
  const cats = withObjects(new MemoryCatsStore())
  const input = { ...tom, id: 99, extra: 'dropped' }
  const json = await cats.createJson(input)
  t.equal(json, TOM_JSON, 'the cat as stored: its own id, and no other field of the input')
  t.strictSame(JSON.parse(json), { id: 1, ...tom })
  input.name = 'changed later'
  input.age = 99
  t.equal((await cats.find(1))?.json, TOM_JSON, 'the input object is not stored: mutating it later does not change the record')
  t.equal((await cats.findCat(1))?.name, 'Tom', 'mutating the input does not change the record')
})

t.test('deleting the last cat and creating again reuses its id', async (t) => {
  const cats = withObjects(new MemoryCatsStore())
  await cats.create(tom)
  await cats.create(kit)
  await cats.remove(2)
  t.equal((await cats.create(max)).id, 2)
  await cats.remove(1)
  await cats.remove(2)
  t.equal(cats.size, 0)
  t.equal((await cats.create(tom)).id, 1)
})

t.test('a page is a new object each time; changing one does not change the repository', async (t) => {
  const cats = await repositoryWith(2)
  const stored = '{"id":1,"name":"cat1","age":1,"breed":"Mixed"},{"id":2,"name":"cat2","age":2,"breed":"Mixed"}'
  const page = await cats.page(0, 10)
  t.strictSame(page, { items: stored, cats: 2, last: 2, more: false })
  page.items = '{"id":9,"name":"cat9","age":1,"breed":"Tabby"}'
  page.last = 9
  page.more = true
  const listed = await cats.list()
  listed.pop()
  listed.push({ id: 9, name: 'cat9', age: 1, breed: 'Tabby' })
  listed[0].name = 'changed'
  t.equal(cats.size, 2)
  t.strictSame(await names(cats), ['cat1', 'cat2'])
  t.strictSame(await cats.page(0, 10), { items: stored, cats: 2, last: 2, more: false }, 'the next page is as stored')
  t.not(await cats.page(0, 10), await cats.page(0, 10))
})

t.test('update shallow-merges arbitrary fields into the record', async (t) => {
  const cats = withObjects(new MemoryCatsStore())
  await cats.create(tom)
  const nested = { deep: { deeper: [1, 2, 3] } }
  const result = await cats.updateCat(1, { name: 'Tommy', color: 'grey', tags: ['a', 'b'], nested, nothing: null, age: '4' })
  t.strictSame(result, {
    id: 1,
    name: 'Tommy',
    age: '4',
    breed: 'Siamese',
    color: 'grey',
    tags: ['a', 'b'],
    nested: { deep: { deeper: [1, 2, 3] } },
    nothing: null
  }, 'fields are merged without type checks, others kept')
  t.strictSame(await cats.findCat(1), result, 'the merge is stored')
  t.strictSame(await cats.list(), [result])

  await cats.updateCat(1, { nested: { other: true } })
  t.strictSame((await cats.findCat(1))?.nested, { other: true }, 'merge is shallow: a nested object is replaced, not merged')
  t.equal((await cats.findCat(1))?.color, 'grey', 'fields not in the update are kept')
})

t.test('update with an empty object changes nothing and returns the record', async (t) => {
  const cats = withObjects(new MemoryCatsStore())
  const json = await cats.createJson(tom)
  t.equal((await cats.update(1, {}))?.json, json, 'the record as stored, unchanged')
  t.equal((await cats.find(1))?.json, json)
  t.strictSame(JSON.parse(json), { id: 1, ...tom })
})

t.test('update never changes the id', async (t) => {
  const cats = await repositoryWith(2)
  const result = await cats.updateCat(1, { id: 2, name: 'renamed' })
  t.equal(result?.id, 1, 'body id is ignored')
  t.equal(result?.name, 'renamed', 'other fields still merge')
  t.equal((await cats.findCat(1))?.name, 'renamed', 'still found under its own id')
  t.equal((await cats.findCat(2))?.name, 'cat2', 'the cat with id 2 is untouched')
  await cats.updateCat(1, { id: 'x' })
  t.equal((await cats.findCat(1))?.id, 1)
})

t.test('an own __proto__ key is stored as plain data, the prototype is unchanged', async (t) => {
  const cats = withObjects(new MemoryCatsStore())
  await cats.create(tom)
  const fields: Record<string, unknown> = JSON.parse('{"__proto__": {"polluted": true, "name": "evil"}, "color": "black"}')
  t.ok(Object.hasOwn(fields, '__proto__'), 'the test input really has an own __proto__ key')

  const expected = '{"id":1,"name":"Tom","age":3,"breed":"Siamese","__proto__":{"polluted":true,"name":"evil"},"color":"black"}'
  const result = (await cats.update(1, fields))?.json
  // JSON.stringify writes own enumerable keys only: a replaced prototype would leave __proto__ out, and
  // a name read through it would be "evil".
  t.equal(result, expected, '__proto__ is an own, enumerable key of the record, the prototype not replaced')
  t.equal((await cats.find(1))?.json, result, 'the merge is stored as returned')
  t.equal((await cats.page(0, 10)).items, expected, 'and listed so')
  // A later merge starts from the stored record: its __proto__ is still an own key, nothing is inherited.
  t.equal((await cats.update(1, { age: 4 }))?.json, expected.replace('"age":3', '"age":4'), 'a later merge keeps __proto__ as plain data')

  const cat = JSON.parse((await cats.find(1))?.json ?? 'null')
  t.ok(Object.hasOwn(cat, '__proto__'), '__proto__ is an own property')
  t.strictSame(Object.getOwnPropertyDescriptor(cat, '__proto__'), {
    value: { polluted: true, name: 'evil' },
    writable: true,
    enumerable: true,
    configurable: true
  })
  t.equal(cat.name, 'Tom', 'no field read through a polluted prototype')
  t.notOk('polluted' in cat, 'nothing inherited from the given object')
  t.equal(cat.color, 'black')
  t.notOk('polluted' in {}, 'Object.prototype is not polluted')
  t.equal(Object.keys(cat).join(','), 'id,name,age,breed,__proto__,color', 'the key is enumerable and listed')
})

t.test('a constructor key is stored as plain data too', async (t) => {
  const cats = withObjects(new MemoryCatsStore())
  await cats.create(tom)
  const expected = '{"id":1,"name":"Tom","age":3,"breed":"Siamese","constructor":"not a function"}'
  t.equal((await cats.update(1, { constructor: 'not a function' }))?.json, expected)
  t.equal((await cats.find(1))?.json, expected, 'stored as an own key')
  t.equal((await cats.update(1, { age: 4 }))?.json, expected.replace('"age":3', '"age":4'), 'a later merge keeps it as plain data')
  t.equal((await cats.findCat(1))?.constructor, 'not a function')
  t.equal(({}).constructor, Object, 'Object.prototype is unchanged')
})

t.test('an id removed down to zero cats is unknown again', async (t) => {
  const cats = await repositoryWith(1)
  await cats.remove(1)
  await cats.remove(1)
  t.equal(cats.size, 0)
  t.equal(await cats.updateCat(1, { name: 'x' }), undefined)
  t.strictSame(await cats.list(), [])
})

t.test('two repositories do not share state', async (t) => {
  const a = await repositoryWith(2)
  const b = withObjects(new MemoryCatsStore())
  t.equal(b.size, 0)
  t.equal((await b.create(tom)).id, 1)
  t.equal(a.size, 2)
})

/** A straightforward reference implementation of the id rules, to compare against. */
class ModelRepository {
  readonly cats: StoredCat[] = []
  create (name: string): void {
    this.cats.push({ id: this.cats.length + 1, name, age: 1, breed: 'Mixed' })
  }

  remove (id: number): void {
    const index = this.cats.findIndex((cat) => cat.id === id)
    if (index !== -1) this.cats.splice(index, 1)
  }

  find (id: number): StoredCat | undefined {
    return this.cats.find((cat) => cat.id === id)
  }
}

t.test('thousands of cats sharing one id (queue compaction) stay correct', async (t) => {
  const N = 3000
  const cats = await repositoryWith(N) // ids 1..N
  // Each cycle deletes a cat with a small id and creates one, which gets id N.
  for (let i = 1; i < N; i++) {
    await cats.remove(i)
    const cat = await cats.create({ name: `dup${i}`, age: i, breed: 'Mixed' })
    if (cat.id !== N) t.fail(`cycle ${i} created id ${cat.id}`)
  }
  t.equal(cats.size, N)
  const ids = new Set((await cats.list()).map((cat) => cat.id))
  t.strictSame([...ids], [N], `all ${N} cats share id ${N}`)
  t.equal((await cats.findCat(N))?.name, `cat${N}`, 'the earliest created is found')

  // Remove the head of the shared id and create a new tail, over and over:
  // the internal queue's head advances and it compacts many times.
  const expected: string[] = (await cats.list()).map((cat) => String(cat.name))
  let mismatches = 0
  for (let i = 0; i < 2 * N; i++) {
    await cats.remove(N)
    expected.shift()
    const cat = await cats.create({ name: `cycle${i}`, age: i, breed: 'Mixed' })
    expected.push(`cycle${i}`)
    if (cat.id !== N || (await cats.findCat(N))?.name !== expected[0]) mismatches++
  }
  t.equal(mismatches, 0, 'every cycle found the earliest created cat')
  t.strictSame(await names(cats), expected, 'list in creation order after the cycles')

  // Update acts on the current head.
  t.equal((await cats.updateCat(N, { name: 'head' }))?.name, 'head')
  t.equal((await cats.list())[0].name, 'head')
  t.equal((await cats.list())[1].name, expected[1])

  // Drain the queue one by one: each removal removes exactly the earliest.
  expected[0] = 'head'
  let wrong = 0
  for (let left = N; left > 0; left--) {
    if ((await cats.findCat(N))?.name !== expected[N - left]) wrong++
    await cats.remove(N)
    if (cats.size !== left - 1) wrong++
  }
  t.equal(wrong, 0, 'draining removed one earliest cat at a time')
  t.equal(cats.size, 0)
  t.equal(await cats.findCat(N), undefined)
  t.equal(await cats.updateCat(N, { name: 'x' }), undefined)
  t.equal((await cats.create(tom)).id, 1, 'an empty repository starts at id 1 again')
})

t.test('a long random sequence matches a reference implementation', async (t) => {
  // A small deterministic PRNG (mulberry32), so a failure is reproducible.
  let seed = 0x5eed
  const random = (): number => {
    seed = (seed + 0x6d2b79f5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  const cats = withObjects(new MemoryCatsStore())
  const model = new ModelRepository()
  let problems = 0
  let mostSharing = 0
  for (let step = 0; step < 20_000; step++) {
    const roll = random()
    // Ids from 0 to size + 1 so unknown ids are tried too; bias towards the top id to build duplicates.
    const id = random() < 0.5 ? model.cats.length : Math.floor(random() * (model.cats.length + 2))
    if (roll < 0.45) {
      await cats.create({ name: `c${step}`, age: 1, breed: 'Mixed' })
      model.create(`c${step}`)
    } else if (roll < 0.9) {
      await cats.remove(id)
      model.remove(id)
    } else {
      const updated = await cats.updateCat(id, { name: `u${step}` })
      const target = model.find(id)
      if (target !== undefined) target.name = `u${step}`
      if ((updated === undefined) !== (target === undefined)) problems++
    }
    if ((await cats.findCat(id))?.name !== model.find(id)?.name) problems++
    if (cats.size !== model.cats.length) problems++
    mostSharing = Math.max(mostSharing, model.cats.filter((cat) => cat.id === id).length)
  }
  t.ok(mostSharing >= 5, `the sequence made ids repeat (up to ${mostSharing} cats on one id)`)
  t.equal(problems, 0, 'find, update and size agree with the reference at every step')
  t.strictSame(await cats.list(), model.cats, 'the final list matches the reference')
})
