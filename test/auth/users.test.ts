import t from 'tap'
import { HashQueue } from '../../src/auth/hash-queue.js'
import { DEMO_USERS } from '../../src/auth/demo-users.js'
import { DEFAULT_SCRYPT_PARAMS, checkPassword, hashPassword, parseHash, type ScryptParams } from '../../src/auth/password.js'
import { PasswordWorkers } from '../../src/auth/password-workers.js'
import { UserStore, type PasswordChecker } from '../../src/auth/users.js'
import type { UserRecord } from '../../src/auth/users-file.js'

const FAST: ScryptParams = { ln: 10, r: 8, p: 1 }

const newQueue = (): HashQueue => new HashQueue(2, 100, 60_000, { whenFull: () => new Error('hash queue full'), whenLate: () => new Error('late'), whenAbandoned: () => new Error('abandoned') })
/** Checks on the test's own thread: these hashes are cheap. */
const onThisThread: PasswordChecker = { check: async (password, encoded) => checkPassword(password, encoded) }

/** Hashes with cheap parameters, once for the whole file. */
const aliceHash = await hashPassword('alice-password', FAST)
const bobHash = await hashPassword('bob-password', FAST)
const alice: UserRecord = { id: 1, username: 'alice', passwordHash: aliceHash }
const bob: UserRecord = { id: '1', username: 'bob', passwordHash: bobHash }

/** A fresh temp directory, removed when the test ends. */

t.test('UserStore: construction accepts distinct users', async (t) => {
  const store = new UserStore([alice, bob], newQueue(), onThisThread)
  t.equal(store.findById(1), alice)
  t.equal(store.findById('1'), bob)
  t.equal(new UserStore([], newQueue(), onThisThread).findById(1), undefined, 'an empty store is fine')
})

t.test('UserStore: construction rejects duplicate ids', async (t) => {
  t.throws(() => new UserStore([alice, { ...bob, id: 1 }], newQueue(), onThisThread), { message: 'duplicate user id 1' })
  t.throws(() => new UserStore([bob, { ...alice, id: '1' }], newQueue(), onThisThread), { message: 'duplicate user id "1"' })
})

t.test('UserStore: construction rejects duplicate usernames', async (t) => {
  t.throws(() => new UserStore([alice, { ...bob, username: 'alice' }], newQueue(), onThisThread), { message: 'duplicate username "alice"' })
})

t.test('UserStore construction rejects an invalid hash', async (t) => {
  for (const passwordHash of ['', 'alice-password', aliceHash.replace('ln=10', 'ln=21'), aliceHash.slice(0, 30)]) {
    t.throws(() => new UserStore([alice, { ...bob, passwordHash }], newQueue(), onThisThread), {
      message: 'user "bob" has an invalid passwordHash'
    }, JSON.stringify(passwordHash))
  }
})

t.test('findById distinguishes 1 from "1"', async (t) => {
  const onlyNumber = new UserStore([alice], newQueue(), onThisThread)
  t.equal(onlyNumber.findById(1), alice)
  t.equal(onlyNumber.findById('1'), undefined, 'the string "1" is another id')
  const onlyString = new UserStore([bob], newQueue(), onThisThread)
  t.equal(onlyString.findById('1'), bob)
  t.equal(onlyString.findById(1), undefined, 'the number 1 is another id')
  t.equal(onlyString.findById(2), undefined)
})

t.test('verifyCredentials: the right password returns the user', async (t) => {
  const store = new UserStore([alice, bob], newQueue(), onThisThread)
  t.equal(await store.verifyCredentials('alice', 'alice-password'), alice)
  t.equal(await store.verifyCredentials('bob', 'bob-password'), bob)
})

t.test('verifyCredentials: a wrong password returns undefined', async (t) => {
  const store = new UserStore([alice, bob], newQueue(), onThisThread)
  t.equal(await store.verifyCredentials('alice', 'bob-password'), undefined, 'another user\'s password')
  t.equal(await store.verifyCredentials('alice', 'Alice-password'), undefined)
  t.equal(await store.verifyCredentials('alice', ''), undefined)
  t.equal(await store.verifyCredentials('ALICE', 'alice-password'), undefined, 'usernames are case-sensitive')
})

t.test('verifyCredentials: an unknown username returns undefined, after a hash through the queue', async (t) => {
  const queue = newQueue()
  const store = new UserStore([alice], queue, onThisThread)
  const pending = store.verifyCredentials('nobody', 'alice-password')
  t.equal(queue.running, 1, 'the unknown user still costs a hash verification in the queue')
  t.equal(await pending, undefined)
  t.equal(queue.running, 0)
  t.equal(await new UserStore([], queue, onThisThread).verifyCredentials('', ''), undefined, 'an empty store')
})

t.test('an unknown username is verified against a valid dummy hash as costly as a real one', async (t) => {
  const checked: string[] = []
  const recording: PasswordChecker = {
    check: async (password, encoded) => {
      checked.push(encoded)
      return checkPassword(password, encoded)
    }
  }
  const store = new UserStore([alice], newQueue(), recording)
  t.equal(await store.verifyCredentials('nobody', 'alice-password'), undefined)
  t.equal(checked.length, 1, 'one hash verification for the unknown user')
  t.not(checked[0], aliceHash)
  t.strictSame(parseHash(checked[0])?.params, DEFAULT_SCRYPT_PARAMS, 'a well-formed hash with the default (production) cost')

  t.equal(await store.verifyCredentials('alice', 'wrong'), undefined)
  t.strictSame(checked, [checked[0], aliceHash], 'a known user is verified against their own hash')
})

t.test('verifyCredentials runs hashes through the given queue and its limit', async (t) => {
  const queue = new HashQueue(1, 0, 60_000, { whenFull: () => new Error('hash queue full'), whenLate: () => new Error('late'), whenAbandoned: () => new Error('abandoned') })
  const store = new UserStore([alice], queue, onThisThread)
  const first = store.verifyCredentials('alice', 'alice-password')
  await t.rejects(store.verifyCredentials('alice', 'alice-password'), { message: 'hash queue full' })
  t.equal(await first, alice)
})

t.test('the demo users verify with their documented passwords', async (t) => {
  t.strictSame(DEMO_USERS.map(({ id, username }) => ({ id, username })), [
    { id: 1, username: 'john' },
    { id: 2, username: 'chris' },
    { id: 3, username: 'maria' }
  ])
  for (const user of DEMO_USERS) {
    t.strictSame(parseHash(user.passwordHash)?.params, { ln: 14, r: 8, p: 5 }, `${user.username}: default scrypt params`)
  }
  const workers = new PasswordWorkers(3)
  t.teardown(() => workers.close())
  const store = new UserStore(DEMO_USERS, new HashQueue(3, 10, 60_000, { whenFull: () => new Error('full'), whenLate: () => new Error('late'), whenAbandoned: () => new Error('abandoned') }), workers)
  const [john, chris, maria, wrong] = await Promise.all([
    store.verifyCredentials('john', 'changeme'),
    store.verifyCredentials('chris', 'secret'),
    store.verifyCredentials('maria', 'guess'),
    store.verifyCredentials('john', 'secret')
  ])
  t.equal(john?.id, 1)
  t.equal(chris?.id, 2)
  t.equal(maria?.id, 3)
  t.equal(wrong, undefined, 'john with chris\'s password fails')
})
