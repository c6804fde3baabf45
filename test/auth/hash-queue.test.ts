import t from 'tap'
import { setImmediate as tick } from 'node:timers/promises'
import { HashQueue } from '../../src/auth/login/hash-queue.js'

class QueueFullError extends Error {
  override readonly name = 'QueueFullError'
  readonly statusCode = 503
}

const whenFull = (): Error => new QueueFullError('too busy')
const whenLate = (): Error => new Error('waited too long')
const whenAbandoned = (): Error => new Error('abandoned')
/** A queue with these errors and a wait bound no test here reaches unless it means to. */
const queueOf = (concurrency: number, maxWaiting: number, full = whenFull, maxWaitMs = 60_000): HashQueue =>
  new HashQueue(concurrency, maxWaiting, maxWaitMs, { whenFull: full, whenLate, whenAbandoned })

/** A task whose completion the test controls. */
interface Gate {
  started: boolean
  task: () => Promise<string>
  finish: () => void
  fail: (error: Error) => void
}

function gate (name: string, log: string[] = []): Gate {
  let resolve: (value: string) => void = () => {}
  let reject: (error: Error) => void = () => {}
  const promise = new Promise<string>((_resolve, _reject) => {
    resolve = _resolve
    reject = _reject
  })
  const g: Gate = {
    started: false,
    task: () => {
      g.started = true
      log.push(`start ${name}`)
      return promise
    },
    finish: () => resolve(name),
    fail: (error) => reject(error)
  }
  return g
}

/** Lets pending promise reactions run. */
const settle = async (): Promise<void> => { await tick() }

t.test('runs a task and resolves with its result', async (t) => {
  const queue = queueOf(1, 0)
  t.equal(await queue.run(async () => 42), 42)
  t.equal(queue.running, 0)
  t.equal(queue.waiting, 0)
})

t.test('never more than `concurrency` tasks run at once', async (t) => {
  const queue = queueOf(2, 10)
  let running = 0
  let most = 0
  const task = async (): Promise<void> => {
    running++
    most = Math.max(most, running)
    t.ok(queue.running <= 2, 'queue.running within the limit')
    await tick()
    await tick()
    running--
  }
  await Promise.all(Array.from({ length: 10 }, () => queue.run(task)))
  t.equal(most, 2, 'exactly two ran side by side, never three')
  t.equal(queue.running, 0, 'all slots free at the end')
  t.equal(queue.waiting, 0)
})

t.test('tasks beyond concurrency wait and are not started', async (t) => {
  const queue = queueOf(2, 5)
  const gates = ['a', 'b', 'c', 'd'].map((name) => gate(name))
  const results = gates.map((g) => queue.run(g.task))
  await settle()
  t.strictSame(gates.map((g) => g.started), [true, true, false, false])
  t.equal(queue.running, 2)
  t.equal(queue.waiting, 2)

  gates[0].finish()
  await settle()
  t.strictSame(gates.map((g) => g.started), [true, true, true, false], 'a finished slot goes to the next waiting task')
  t.equal(queue.running, 2)
  t.equal(queue.waiting, 1)

  for (const g of gates) g.finish()
  t.strictSame(await Promise.all(results), ['a', 'b', 'c', 'd'], 'each caller gets its own result')
  t.equal(queue.running, 0)
  t.equal(queue.waiting, 0)
})

t.test('waiting tasks run in the order they were queued', async (t) => {
  const log: string[] = []
  const queue = queueOf(1, 10)
  const gates = ['1', '2', '3', '4', '5'].map((name) => gate(name, log))
  const results = gates.map((g) => queue.run(g.task))
  await settle()
  t.strictSame(log, ['start 1'], 'only the first runs')
  // Release the waiting ones in reverse order, then the running one:
  // the queue, not the release order, decides who starts next.
  for (let i = gates.length - 1; i >= 0; i--) gates[i].finish()
  await Promise.all(results)
  t.strictSame(log, ['start 1', 'start 2', 'start 3', 'start 4', 'start 5'])
})

t.test('beyond maxWaiting the whenFull error is thrown at once', async (t) => {
  const queue = queueOf(1, 2)
  const running = gate('running')
  const waiting = [gate('w1'), gate('w2')]
  const first = queue.run(running.task)
  const queued = waiting.map((g) => queue.run(g.task))
  t.equal(queue.running, 1)
  t.equal(queue.waiting, 2)

  const refused = gate('refused')
  let outcome = 'pending'
  const rejected = queue.run(refused.task).then(
    () => { outcome = 'resolved' },
    (error: unknown) => { outcome = error instanceof QueueFullError ? 'refused' : `other: ${String(error)}` }
  )
  await settle()
  t.equal(outcome, 'refused', 'rejected while the other tasks are still running or waiting')
  t.equal(refused.started, false, 'the refused task never ran')
  t.equal(queue.running, 1, 'a refused task takes no slot')
  t.equal(queue.waiting, 2, 'and no place in the queue')
  await rejected

  await t.rejects(queue.run(async () => 'x'), { message: 'too busy', statusCode: 503 }, 'the error from whenFull, as it made it')

  running.finish()
  for (const g of waiting) g.finish()
  t.strictSame(await Promise.all([first, ...queued]), ['running', 'w1', 'w2'], 'the accepted tasks still complete')
  t.equal(await queue.run(async () => 'after'), 'after', 'room again once they are done')
})

t.test('whenFull is called once per refusal and gives a fresh error', async (t) => {
  let calls = 0
  const queue = queueOf(1, 0, () => new Error(`full #${++calls}`))
  const running = gate('running')
  const first = queue.run(running.task)
  await t.rejects(queue.run(async () => 1), { message: 'full #1' })
  await t.rejects(queue.run(async () => 1), { message: 'full #2' })
  t.equal(calls, 2)
  running.finish()
  await first
  t.equal(calls, 2, 'not called for accepted tasks')
})

t.test('maxWaiting 0: only `concurrency` tasks are accepted', async (t) => {
  const queue = queueOf(2, 0)
  const a = gate('a')
  const b = gate('b')
  const runs = [queue.run(a.task), queue.run(b.task)]
  await t.rejects(queue.run(async () => 'c'), { name: 'QueueFullError', message: 'too busy' })
  t.equal(queue.waiting, 0)
  a.finish()
  b.finish()
  t.strictSame(await Promise.all(runs), ['a', 'b'])
})

t.test('a failing task releases its slot to the next waiting task', async (t) => {
  const queue = queueOf(1, 5)
  const failing = gate('failing')
  const next = gate('next')
  const failed = queue.run(failing.task)
  const after = queue.run(next.task)
  await settle()
  t.equal(next.started, false)

  failing.fail(new Error('task broke'))
  await t.rejects(failed, { message: 'task broke' }, 'the caller gets the task\'s own error')
  await settle()
  t.equal(next.started, true, 'the waiting task got the slot')
  t.equal(queue.running, 1)
  next.finish()
  t.equal(await after, 'next')
  t.equal(queue.running, 0)
})

t.test('a failing task with nobody waiting frees its slot', async (t) => {
  const queue = queueOf(1, 0)
  await t.rejects(queue.run(async () => { throw new Error('async failure') }), { message: 'async failure' })
  t.equal(queue.running, 0)
  await t.rejects(queue.run(() => { throw new Error('sync failure') }), { message: 'sync failure' }, 'a task that throws before returning a promise')
  t.equal(queue.running, 0)
  t.equal(await queue.run(async () => 'ok'), 'ok', 'the slot is usable again')
})

t.test('many failures do not leak slots', async (t) => {
  const queue = queueOf(3, 100)
  const outcomes = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => queue.run(async () => {
    await tick()
    if (i % 2 === 0) throw new Error(`fail ${i}`)
    return i
  })))
  t.equal(outcomes.filter((o) => o.status === 'rejected').length, 25)
  t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 25)
  t.equal(queue.running, 0)
  t.equal(queue.waiting, 0)
  // Still exactly three at a time afterwards.
  const gates = ['a', 'b', 'c', 'd'].map((name) => gate(name))
  const runs = gates.map((g) => queue.run(g.task))
  await settle()
  t.strictSame(gates.map((g) => g.started), [true, true, true, false])
  for (const g of gates) g.finish()
  await Promise.all(runs)
})

t.test('a task whose signal aborts while it waits leaves the queue and never starts', async (t) => {
  const queue = queueOf(1, 5)
  const first = gate('first')
  const gone = gate('gone')
  const next = gate('next')
  const runFirst = queue.run(first.task)
  const client = new AbortController()
  const runGone = queue.run(gone.task, client.signal)
  const runNext = queue.run(next.task, new AbortController().signal)
  await settle()
  t.equal(queue.waiting, 2)
  client.abort()
  await t.rejects(runGone, { message: 'abandoned' })
  t.equal(queue.waiting, 1, 'it left the queue at once')
  first.finish()
  t.equal(await runFirst, 'first')
  await settle()
  t.equal(gone.started, false, 'the abandoned task never ran')
  t.equal(next.started, true, 'the slot went to the next one')
  next.finish()
  t.equal(await runNext, 'next')
  t.equal(queue.running, 0)
})

t.test('a task whose signal aborted already is refused even with a free slot', async (t) => {
  const queue = queueOf(1, 5)
  const client = new AbortController()
  client.abort()
  const task = gate('late')
  await t.rejects(queue.run(task.task, client.signal), { message: 'abandoned' })
  t.equal(task.started, false)
  t.equal(queue.running, 0)
})

t.test('a task that waits longer than maxWaitMs is refused instead of served late', async (t) => {
  const queue = queueOf(1, 5, whenFull, 50)
  const first = gate('first')
  const waiting = gate('waiting')
  const runFirst = queue.run(first.task)
  const started = Date.now()
  await t.rejects(queue.run(waiting.task), { message: 'waited too long' })
  const waited = Date.now() - started
  t.ok(waited >= 45 && waited < 1000, `refused after ${waited} ms`)
  t.equal(queue.waiting, 0)
  first.finish()
  await runFirst
  t.equal(waiting.started, false)
  t.equal(queue.running, 0, 'the slot is free again')
})

t.test('a task started within the bound is not refused later, and its signal no longer matters', async (t) => {
  const queue = queueOf(1, 5, whenFull, 50)
  const first = gate('first')
  const second = gate('second')
  const client = new AbortController()
  const runFirst = queue.run(first.task)
  const runSecond = queue.run(second.task, client.signal)
  first.finish()
  await runFirst
  await new Promise((resolve) => setTimeout(resolve, 100))
  client.abort()
  second.finish()
  t.equal(await runSecond, 'second', 'past the bound and aborted after starting: still its result')
})

t.test('reports waits and refusals to its observer, and nothing for a task that did not wait', async (t) => {
  const events: string[] = []
  const waits: number[] = []
  const queue = new HashQueue(1, 1, 60_000, { whenFull, whenLate, whenAbandoned }, {
    enqueued: () => events.push('enqueued'),
    dequeued: (seconds) => {
      events.push('dequeued')
      waits.push(seconds)
    },
    refused: () => events.push('refused')
  })
  const first = gate('first')
  const second = gate('second')
  const results = [queue.run(first.task), queue.run(second.task)]
  await t.rejects(queue.run(async () => 'third'), QueueFullError)
  t.strictSame(events, ['enqueued', 'refused'], 'the first ran at once, the second waits, the third is refused')
  await new Promise((resolve) => setTimeout(resolve, 20))
  first.finish()
  second.finish()
  t.strictSame(await Promise.all(results), ['first', 'second'])
  t.strictSame(events, ['enqueued', 'refused', 'dequeued'])
  t.ok(waits[0] >= 0.015 && waits[0] < 60, `the wait is measured in seconds (${waits[0]})`)
})
