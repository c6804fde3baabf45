import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { batchedStatements } from '../../src/db/batched-statements.js'

// A batch goes out on setImmediate: waiting one turn of the event loop sees it sent, where a short timer
// could fire first on a busy machine.

/** A `run` that records each batch it is given and answers when told to. */
function recorder () {
  const batches: number[][] = []
  const pending: Array<{ resolve: () => void, reject: (error: Error) => void }> = []
  const run = async (items: readonly number[]): Promise<number[]> => {
    batches.push([...items])
    await new Promise<void>((resolve, reject) => pending.push({ resolve, reject }))
    return items.map((item) => item * 10)
  }
  return { batches, pending, run }
}

t.test('the items of one turn go together, at most maxBatchSize each, and each gets its own answer', async (t) => {
  const seen: number[][] = []
  const tracked = batchedStatements(async (items: readonly number[]) => {
    seen.push([...items])
    return items.map((item) => item + 1)
  }, { maxBatchSize: 3 })
  t.strictSame(await Promise.all([1, 2, 2, 3, 4].map((item) => tracked.load(item))), [2, 3, 3, 4, 5])
  t.strictSame(seen, [[1, 2, 2], [3, 4]], 'repeated items are sent as they came, none answered from a cache')
  t.strictSame(await Promise.all([tracked.load(7)]), [8])
  t.strictSame(seen.at(-1), [7], 'a later turn is another statement')
})

t.test('with maxInFlight, what arrives while the statements run waits and goes as one batch when one ends', async (t) => {
  const { batches, pending, run } = recorder()
  const loader = batchedStatements(run, { maxBatchSize: 100, maxInFlight: 1, maxWaitMs: 10_000 })
  const first = loader.load(1)
  await nextTurn()
  t.strictSame(batches, [[1]], 'the first goes at once')
  const waiting = [loader.load(2), loader.load(3)]
  await nextTurn()
  const later = loader.load(4)
  await nextTurn()
  t.strictSame(batches, [[1]], 'nothing else runs meanwhile')
  pending[0].resolve()
  t.equal(await first, 10)
  await nextTurn()
  t.strictSame(batches, [[1], [2, 3, 4]], 'the waiting items of several turns go together')
  pending[1].resolve()
  t.strictSame(await Promise.all([...waiting, later]), [20, 30, 40])
})

t.test('with maxInFlight, the batches formed in one turn (more items than maxBatchSize) take turns too', async (t) => {
  const { batches, pending, run } = recorder()
  const loader = batchedStatements(run, { maxBatchSize: 2, maxInFlight: 1, maxWaitMs: 10_000 })
  const answers = Promise.all([1, 2, 3, 4, 5].map((item) => loader.load(item)))
  await nextTurn()
  t.strictSame(batches, [[1, 2]], 'one statement at a time')
  pending[0].resolve()
  await nextTurn()
  t.strictSame(batches, [[1, 2], [3, 4]])
  pending[1].resolve()
  await nextTurn()
  t.strictSame(batches, [[1, 2], [3, 4], [5]])
  pending[2].resolve()
  t.strictSame(await answers, [10, 20, 30, 40, 50])
})

t.test('a batch waits at most maxWaitMs for a statement that does not end', async (t) => {
  const { batches, pending, run } = recorder()
  const loader = batchedStatements(run, { maxBatchSize: 100, maxInFlight: 1, maxWaitMs: 50 })
  const stalled = loader.load(1)
  await nextTurn()
  const started = Date.now()
  const next = loader.load(2)
  await sleep(20)
  t.strictSame(batches, [[1]], 'still waiting')
  while (batches.length < 2) await sleep(2)
  const waited = Date.now() - started
  t.ok(waited >= 45 && waited < 1000, `went after ${waited} ms`)
  pending[1].resolve()
  t.equal(await next, 20)
  pending[0].resolve()
  t.equal(await stalled, 10)
})

t.test('a failed statement fails each of its items, and the batch waiting behind it still goes', async (t) => {
  const { batches, pending, run } = recorder()
  const loader = batchedStatements(run, { maxBatchSize: 100, maxInFlight: 1, maxWaitMs: 10_000 })
  const failing = [loader.load(1), loader.load(2)]
  await nextTurn()
  const next = loader.load(3)
  await nextTurn()
  pending[0].reject(new Error('connection lost'))
  for (const item of failing) await t.rejects(item, { message: 'connection lost' })
  await nextTurn()
  t.strictSame(batches, [[1, 2], [3]])
  pending[1].resolve()
  t.equal(await next, 30)
})
