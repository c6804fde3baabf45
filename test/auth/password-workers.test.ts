import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { hashPassword, type ScryptParams } from '../../src/auth/password.js'
import { PasswordWorkers } from '../../src/auth/password-workers.js'

const FAST: ScryptParams = { ln: 10, r: 8, p: 1 }
const hash = await hashPassword('right', FAST)

/** The nice value of each thread of this process (field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNiceValues (): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
  })
}

t.test('checks passwords on a worker that starts with the first check', async (t) => {
  const workers = new PasswordWorkers(2)
  t.teardown(() => workers.close())
  t.equal(workers.threads, 0, 'no thread before anyone logs in')
  t.equal(await workers.check('right', hash), true)
  t.equal(workers.threads, 1)
  t.equal(await workers.check('wrong', hash), false)
  t.equal(await workers.check('right', 'not a hash'), false, 'a malformed hash matches nothing')
  t.equal(workers.threads, 1, 'an idle worker is used again')
})

t.test('checks at once use up to `size` workers, and more wait on them', async (t) => {
  const workers = new PasswordWorkers(2)
  t.teardown(() => workers.close())
  const passwords = ['right', 'wrong', 'right', 'Right', 'right', '']
  const results = await Promise.all(passwords.map((password) => workers.check(password, hash)))
  t.strictSame(results, [true, false, true, false, true, false], 'each check gets its own answer')
  t.equal(workers.threads, 2)
})

t.test('workers run below normal CPU priority (nice 10); the calling thread keeps its own', async (t) => {
  const workers = new PasswordWorkers(2)
  t.teardown(() => workers.close())
  const before = threadNiceValues()
  t.equal(before.filter((nice) => nice === 10).length, 0)
  await Promise.all([workers.check('right', hash), workers.check('right', hash)])
  const after = threadNiceValues()
  t.equal(after.filter((nice) => nice === 10).length, 2, 'two worker threads at nice 10')
  const self = readFileSync('/proc/thread-self/stat', 'utf8')
  t.equal(Number(self.slice(self.lastIndexOf(')') + 2).split(' ')[16]), before[0], 'the event loop thread is unchanged')
})

t.test('closing fails the checks in flight; a later check starts a fresh worker', async (t) => {
  const workers = new PasswordWorkers(1)
  t.teardown(() => workers.close())
  // The default cost takes long enough that the check is still running when close() stops the worker.
  const slow = await hashPassword('right')
  const inFlight = workers.check('right', slow)
  await workers.close()
  await t.rejects(inFlight, { message: 'the password worker stopped' })
  t.equal(workers.threads, 0)
  t.equal(await workers.check('right', hash), true)
  t.equal(workers.threads, 1)
})
