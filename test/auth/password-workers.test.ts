import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { scryptSync } from 'node:crypto'
import { hashPassword, verifyPassword, type ScryptParams } from '../../src/auth/login/password.js'
import { PasswordWorkers } from '../../src/auth/login/password-workers.js'

const FAST: ScryptParams = { ln: 10, r: 8, p: 1 }
const hash = await hashPassword('right', FAST)

/** The nice value of a thread from its /proc stat line (the 19th field). */
const niceOf = (stat: string): number => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
const threadNiceValues = (): number[] =>
  readdirSync('/proc/self/task').map((tid) => niceOf(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')))

t.test('derives the scrypt key on a worker that starts with the first derivation', async (t) => {
  const workers = new PasswordWorkers(2)
  t.teardown(() => workers.close())
  t.equal(workers.threads, 0, 'no thread before anyone logs in')
  const salt = Buffer.from('0123456789abcdef')
  const options = { N: 1024, r: 8, p: 1 }
  const key = await workers.derive('pässword', salt, 32, options)
  t.ok(Buffer.isBuffer(key))
  t.same(key, scryptSync('pässword', salt, 32, options), 'the same bytes as scrypt on this thread')
  t.equal(workers.threads, 1)
  t.equal(await verifyPassword('right', hash, workers.derive), true)
  t.equal(await verifyPassword('wrong', hash, workers.derive), false)
  t.equal(workers.threads, 1, 'an idle worker is used again')
})

t.test('derivations at once use up to `size` workers, and more wait on them', async (t) => {
  const workers = new PasswordWorkers(2)
  t.teardown(() => workers.close())
  const passwords = ['right', 'wrong', 'right', 'Right', 'right', '']
  const results = await Promise.all(passwords.map((password) => verifyPassword(password, hash, workers.derive)))
  t.strictSame(results, [true, false, true, false, true, false], 'each gets its own answer')
  t.equal(workers.threads, 2)
})

t.test('workers run below normal CPU priority (nice 10); the calling thread keeps its own', async (t) => {
  const workers = new PasswordWorkers(2)
  t.teardown(() => workers.close())
  // The suite may itself run niced (`nice npm test`): the event loop thread keeps whatever it started with.
  const own = niceOf(readFileSync('/proc/thread-self/stat', 'utf8'))
  const before = threadNiceValues()
  t.equal(before.filter((nice) => nice === 10).length, 0)
  await Promise.all([verifyPassword('right', hash, workers.derive), verifyPassword('right', hash, workers.derive)])
  t.equal(threadNiceValues().filter((nice) => nice === 10).length, 2, 'two worker threads at nice 10')
  t.equal(niceOf(readFileSync('/proc/thread-self/stat', 'utf8')), own, 'the event loop thread is unchanged')
})

t.test('closing fails the derivations in flight; a later one starts a fresh worker', async (t) => {
  const workers = new PasswordWorkers(1)
  t.teardown(() => workers.close())
  // The default cost takes long enough that the derivation is still running when close() stops the worker.
  const slow = await hashPassword('right')
  const inFlight = verifyPassword('right', slow, workers.derive)
  await workers.close()
  await t.rejects(inFlight, { message: 'the password worker stopped' })
  t.equal(workers.threads, 0)
  t.equal(await verifyPassword('right', hash, workers.derive), true)
  t.equal(workers.threads, 1)
})

t.test('a worker that fails stops alone: its derivation rejects, the next one gets a fresh worker', async (t) => {
  const workers = new PasswordWorkers(1)
  t.teardown(() => workers.close())
  // Parameters scrypt refuses (N not a power of two) throw inside the worker, which then exits.
  await t.rejects(workers.derive('pw', Buffer.alloc(16), 32, { N: 1000, r: 8, p: 1 }), { message: 'the password worker stopped' })
  t.equal(workers.threads, 0)
  t.equal(await verifyPassword('right', hash, workers.derive), true)
})
