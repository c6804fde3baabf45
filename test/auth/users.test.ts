import t from 'tap'
import { HashQueue } from '../../src/auth/login/hash-queue.js'
import { DEMO_USERS } from '../../src/auth/login/demo-users.js'
import { DEFAULT_SCRYPT_PARAMS, deriveOnThreadPool, hashPassword, parseHash, verifyPassword, type ScryptParams } from '../../src/auth/login/password.js'
import { PasswordWorkers } from '../../src/auth/login/password-workers.js'
import { UserStore } from '../../src/auth/login/users.js'
import type { UserRecord } from '../../src/auth/login/users-file.js'

const FAST: ScryptParams = { ln: 10, r: 8, p: 1 }

const newQueue = (): HashQueue => new HashQueue(2, 100, 60_000, { whenFull: () => new Error('hash queue full'), whenLate: () => new Error('late'), whenAbandoned: () => new Error('abandoned') })

/** Hashes with cheap parameters, once for the whole file. */
const aliceHash = await hashPassword('alice-password', FAST)
const bobHash = await hashPassword('bob-password', FAST)
const alice: UserRecord = { id: 1, username: 'alice', passwordHash: aliceHash }
const bob: UserRecord = { id: '1', username: 'bob', passwordHash: bobHash }

/** A fresh temp directory, removed when the test ends. */

t.test('UserStore: construction accepts distinct users', async (t) => {
  const store = new UserStore([alice, bob], newQueue(), deriveOnThreadPool)
  t.equal(store.findById(1), alice)
  t.equal(store.findById('1'), bob)
  t.equal(new UserStore([], newQueue(), deriveOnThreadPool).findById(1), undefined, 'an empty store is fine')
})

t.test('UserStore: construction rejects duplicate ids', async (t) => {
  t.throws(() => new UserStore([alice, { ...bob, id: 1 }], newQueue(), deriveOnThreadPool), { message: 'duplicate user id 1' })
  t.throws(() => new UserStore([bob, { ...alice, id: '1' }], newQueue(), deriveOnThreadPool), { message: 'duplicate user id "1"' })
})

t.test('UserStore: construction rejects duplicate usernames', async (t) => {
  t.throws(() => new UserStore([alice, { ...bob, username: 'alice' }], newQueue(), deriveOnThreadPool), { message: 'duplicate username "alice"' })
})

t.test('UserStore construction rejects an invalid hash', async (t) => {
  for (const passwordHash of ['', 'alice-password', aliceHash.replace('ln=10', 'ln=21'), aliceHash.slice(0, 30)]) {
    t.throws(() => new UserStore([alice, { ...bob, passwordHash }], newQueue(), deriveOnThreadPool), {
      message: 'user "bob" has an invalid passwordHash'
    }, JSON.stringify(passwordHash))
  }
})

t.test('findById distinguishes 1 from "1"', async (t) => {
  const onlyNumber = new UserStore([alice], newQueue(), deriveOnThreadPool)
  t.equal(onlyNumber.findById(1), alice)
  t.equal(onlyNumber.findById('1'), undefined, 'the string "1" is another id')
  const onlyString = new UserStore([bob], newQueue(), deriveOnThreadPool)
  t.equal(onlyString.findById('1'), bob)
  t.equal(onlyString.findById(1), undefined, 'the number 1 is another id')
  t.equal(onlyString.findById(2), undefined)
})

t.test('verifyCredentials: the right password returns the user', async (t) => {
  const store = new UserStore([alice, bob], newQueue(), deriveOnThreadPool)
  t.equal(await store.verifyCredentials('alice', 'alice-password'), alice)
  t.equal(await store.verifyCredentials('bob', 'bob-password'), bob)
})

t.test('verifyCredentials: a wrong password returns undefined', async (t) => {
  const store = new UserStore([alice, bob], newQueue(), deriveOnThreadPool)
  t.equal(await store.verifyCredentials('alice', 'bob-password'), undefined, 'another user\'s password')
  t.equal(await store.verifyCredentials('alice', 'Alice-password'), undefined)
  t.equal(await store.verifyCredentials('alice', ''), undefined)
  t.equal(await store.verifyCredentials('ALICE', 'alice-password'), undefined, 'usernames are case-sensitive')
})

t.test('verifyCredentials: an unknown username returns undefined, after a hash through the queue', async (t) => {
  const queue = newQueue()
  const store = new UserStore([alice], queue, deriveOnThreadPool)
  const pending = store.verifyCredentials('nobody', 'alice-password')
  t.equal(queue.running, 1, 'the unknown user still costs a hash verification in the queue')
  t.equal(await pending, undefined)
  t.equal(queue.running, 0)
  t.equal(await new UserStore([], queue, deriveOnThreadPool).verifyCredentials('', ''), undefined, 'an empty store')
})

t.test('an unknown username is verified against a valid dummy hash as costly as a real one', async (t) => {
  const checked: string[] = []
  const users = await t.mockImport<typeof import('../../src/auth/login/users.js')>('../../src/auth/login/users.js', {
    '../../src/auth/login/password.js': {
      parseHash,
      verifyPassword: async (password: string, encoded: string): Promise<boolean> => {
        checked.push(encoded)
        return verifyPassword(password, encoded)
      }
    }
  })
  const store = new users.UserStore([alice], newQueue(), deriveOnThreadPool)
  t.equal(await store.verifyCredentials('nobody', 'alice-password'), undefined)
  t.equal(checked.length, 1, 'one hash verification for the unknown user')
  t.not(checked[0], aliceHash)
  t.strictSame(parseHash(checked[0])?.params, DEFAULT_SCRYPT_PARAMS, 'a well-formed hash with the default (production) cost')

  t.equal(await store.verifyCredentials('alice', 'wrong'), undefined)
  t.strictSame(checked, [checked[0], aliceHash], 'a known user is verified against their own hash')
})

t.test('verifyCredentials runs hashes through the given queue and its limit', async (t) => {
  const queue = new HashQueue(1, 0, 60_000, { whenFull: () => new Error('hash queue full'), whenLate: () => new Error('late'), whenAbandoned: () => new Error('abandoned') })
  const store = new UserStore([alice], queue, deriveOnThreadPool)
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
  const store = new UserStore(DEMO_USERS, new HashQueue(3, 10, 60_000, { whenFull: () => new Error('full'), whenLate: () => new Error('late'), whenAbandoned: () => new Error('abandoned') }), workers.derive)
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
