import t from 'tap'
import * as crypto from 'node:crypto'
import { DEFAULT_SCRYPT_PARAMS, hashPassword, parseHash, verifyPassword, type ScryptParams } from '../../src/auth/login/password.js'

/** Cheap parameters: a hash in a few milliseconds. */
const FAST: ScryptParams = { ln: 10, r: 8, p: 1 }
const PHC = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/

t.test('DEFAULT_SCRYPT_PARAMS are ln=14, r=8, p=5 (OWASP equivalent of N=2^17, r=8, p=1)', async (t) => {
  t.strictSame(DEFAULT_SCRYPT_PARAMS, { ln: 14, r: 8, p: 5 })
})

t.test('hashPassword with no params uses the defaults and verifies', async (t) => {
  const hash = await hashPassword('correct horse')
  t.match(hash, /^\$scrypt\$ln=14,r=8,p=5\$/)
  t.equal(await verifyPassword('correct horse', hash), true)
})

t.test('hashPassword writes a self-describing PHC string $scrypt$ln=..,r=..,p=..$salt$hash', async (t) => {
  const hash = await hashPassword('secret', FAST)
  const match = PHC.exec(hash)
  if (match === null) throw new Error(`not a PHC string: ${hash}`)
  const [, ln, r, p, salt, key] = match
  t.strictSame({ ln, r, p }, { ln: '10', r: '8', p: '1' }, 'the parameters used are recorded')
  t.equal(salt.length, 22, '16-byte salt, unpadded base64')
  t.equal(key.length, 43, '32-byte key, unpadded base64')
  t.notMatch(`${salt}$${key}`, /=/, 'no base64 padding')
  t.equal(Buffer.from(salt, 'base64').length, 16)
  t.equal(Buffer.from(key, 'base64').length, 32)

  // The key really is scrypt(password, salt) with the recorded parameters.
  const expected = crypto.scryptSync('secret', Buffer.from(salt, 'base64'), 32, { N: 2 ** 10, r: 8, p: 1 })
  t.equal(key, expected.toString('base64').replace(/=+$/, ''))
})

t.test('other params are recorded as given', async (t) => {
  const hash = await hashPassword('x', { ln: 4, r: 2, p: 3 })
  t.match(hash, /^\$scrypt\$ln=4,r=2,p=3\$/)
  t.strictSame(parseHash(hash)?.params, { ln: 4, r: 2, p: 3 })
  t.equal(await verifyPassword('x', hash), true)
})

t.test('verifyPassword: true for the right password, false for any other', async (t) => {
  const hash = await hashPassword('changeme', FAST)
  t.equal(await verifyPassword('changeme', hash), true)
  for (const wrong of ['Changeme', 'changeme ', 'changem', '', 'changemechangeme']) {
    t.equal(await verifyPassword(wrong, hash), false, `wrong password ${JSON.stringify(wrong)}`)
  }
})

t.test('verifyPassword: the empty password and long passwords work', async (t) => {
  const empty = await hashPassword('', FAST)
  t.equal(await verifyPassword('', empty), true)
  t.equal(await verifyPassword(' ', empty), false)
  const long = 'p'.repeat(1024)
  const longHash = await hashPassword(long, FAST)
  t.equal(await verifyPassword(long, longHash), true)
  t.equal(await verifyPassword(long.slice(1), longHash), false)
})

t.test('passwords are NFC-normalized: composed and decomposed forms match', async (t) => {
  const composed = 'caf\u00e9'
  const decomposed = 'cafe\u0301'
  const hash = await hashPassword(composed, FAST)
  t.equal(await verifyPassword(decomposed, hash), true)
  t.equal(await verifyPassword('cafe', hash), false)
})

t.test('every hash gets its own salt', async (t) => {
  const hashes = await Promise.all([1, 2, 3, 4].map(() => hashPassword('same password', FAST)))
  const salts = hashes.map((hash) => hash.split('$')[3])
  const keys = hashes.map((hash) => hash.split('$')[4])
  t.equal(new Set(salts).size, 4, 'four different salts')
  t.equal(new Set(keys).size, 4, 'so four different keys')
  for (const hash of hashes) t.equal(await verifyPassword('same password', hash), true)
})

t.test('parseHash returns the params, salt and key of a valid hash', async (t) => {
  const hash = await hashPassword('pw', FAST)
  const parsed = parseHash(hash)
  if (parsed === undefined) throw new Error('a fresh hash must parse')
  t.strictSame(parsed.params, FAST)
  t.equal(parsed.salt.length, 16)
  t.equal(parsed.key.length, 32)
  t.equal(parsed.salt.toString('base64').replace(/=+$/, ''), hash.split('$')[3])
  t.equal(parsed.key.toString('base64').replace(/=+$/, ''), hash.split('$')[4])
})

const SALT = 'AAAAAAAAAAAAAAAAAAAAAA'
const KEY = 'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB'
const withParams = (params: string): string => `$scrypt$${params}$${SALT}$${KEY}`

t.test('parseHash accepts the bounds: N * r up to 2^20 (128 MiB), p 1..16', async (t) => {
  for (const params of ['ln=1,r=1,p=1', 'ln=20,r=1,p=16', 'ln=17,r=8,p=1', 'ln=14,r=64,p=1', 'ln=14,r=8,p=5']) {
    t.not(parseHash(withParams(params)), undefined, params)
  }
})

t.test('parseHash rejects out-of-range parameters', async (t) => {
  const cases = {
    'ln > 20': 'ln=21,r=1,p=1',
    'N * r over 2^20 (128 MiB)': 'ln=18,r=8,p=1',
    'r too large for N': 'ln=14,r=65,p=1',
    'p > 16': 'ln=14,r=8,p=17',
    'ln = 0': 'ln=0,r=8,p=1',
    'r = 0': 'ln=14,r=0,p=1',
    'p = 0': 'ln=14,r=8,p=0',
    'ln = 99': 'ln=99,r=8,p=1',
    'three-digit ln': 'ln=100,r=8,p=1',
    'negative p': 'ln=14,r=8,p=-1'
  }
  for (const [name, params] of Object.entries(cases)) {
    t.equal(parseHash(withParams(params)), undefined, name)
  }
})

t.test('parseHash rejects malformed strings', async (t) => {
  const cases = {
    empty: '',
    'plain text': 'changeme',
    'other algorithm': `$argon2id$v=19$m=65536,t=3,p=4$${SALT}$${KEY}`,
    'bcrypt hash': '$2b$10$abcdefghijklmnopqrstuuJ5L7vFqGl3.5oJ0k6r0bfcZ1W2bYb6e',
    'missing key': `$scrypt$ln=14,r=8,p=5$${SALT}`,
    'missing salt': `$scrypt$ln=14,r=8,p=5$$${KEY}`,
    'params in another order': `$scrypt$r=8,ln=14,p=5$${SALT}$${KEY}`,
    'missing p': `$scrypt$ln=14,r=8$${SALT}$${KEY}`,
    'non-numeric ln': `$scrypt$ln=x,r=8,p=5$${SALT}$${KEY}`,
    'salt too short': `$scrypt$ln=14,r=8,p=5$AAAA$${KEY}`,
    'key too short': `$scrypt$ln=14,r=8,p=5$${SALT}$BBBB`,
    'not base64': `$scrypt$ln=14,r=8,p=5$${SALT}$${'!'.repeat(43)}`,
    'padded base64': `$scrypt$ln=14,r=8,p=5$${SALT}==$${KEY}`,
    'url-safe base64': `$scrypt$ln=14,r=8,p=5$${SALT}$${'-'.repeat(43)}`,
    'trailing data': `$scrypt$ln=14,r=8,p=5$${SALT}$${KEY}$extra`,
    'leading space': ` $scrypt$ln=14,r=8,p=5$${SALT}$${KEY}`,
    'trailing newline': `$scrypt$ln=14,r=8,p=5$${SALT}$${KEY}\n`,
    'upper-case name': `$SCRYPT$ln=14,r=8,p=5$${SALT}$${KEY}`
  }
  for (const [name, hash] of Object.entries(cases)) {
    t.equal(parseHash(hash), undefined, name)
  }
})

t.test('verifyPassword on a malformed or out-of-range hash returns false', async (t) => {
  const good = await hashPassword('pw', FAST)
  const cases = {
    empty: '',
    'plain password stored by mistake': 'pw',
    'key cut below 16 characters': good.slice(0, -30),
    'key removed': good.slice(0, good.lastIndexOf('$') + 1),
    'ln too large': good.replace('ln=10', 'ln=21'),
    'r zero': good.replace('r=8', 'r=0'),
    'p too large': good.replace('p=1', 'p=17')
  }
  for (const [name, hash] of Object.entries(cases)) {
    t.equal(await verifyPassword('pw', hash), false, name)
  }
})

t.test('a stored key of another length than 32 bytes is refused', async (t) => {
  const hash = await hashPassword('pw', FAST)
  const shorter = hash.slice(0, -11) // 32-byte key cut to 32 base64 characters = 24 bytes
  t.equal(parseHash(shorter), undefined)
  t.equal(await verifyPassword('pw', shorter), false, 'even the right password does not match a truncated key')
})

t.test('verifyPassword is false when the recorded params differ from the ones used', async (t) => {
  const hash = await hashPassword('pw', FAST)
  t.equal(await verifyPassword('pw', hash.replace('ln=10', 'ln=11')), false, 'a different N')
  t.equal(await verifyPassword('pw', hash.replace('p=1', 'p=2')), false, 'a different p')
})

t.test('verifyPassword is false when the salt or key is changed', async (t) => {
  const hash = await hashPassword('pw', FAST)
  const [, , params, salt, key] = hash.split('$')
  const flip = (text: string): string => (text[0] === 'A' ? 'B' : 'A') + text.slice(1)
  t.equal(await verifyPassword('pw', `$scrypt$${params}$${flip(salt)}$${key}`), false, 'other salt')
  t.equal(await verifyPassword('pw', `$scrypt$${params}$${salt}$${flip(key)}`), false, 'other key')
})

t.test('a failure inside scrypt rejects hashPassword and verifyPassword instead of hanging', async (t) => {
  const failure = new Error('scrypt failed')
  const failingScrypt = (_password: crypto.BinaryLike, _salt: crypto.BinaryLike, _length: number, _options: crypto.ScryptOptions,
    callback: (error: Error | null, key: Buffer) => void): void => {
    setImmediate(() => { callback(failure, Buffer.alloc(0)) })
  }
  const password = await t.mockImport<typeof import('../../src/auth/login/password.js')>('../../src/auth/login/password.js', {
    'node:crypto': { ...crypto, scrypt: failingScrypt }
  })
  const good = await hashPassword('pw', FAST)
  await t.rejects(password.hashPassword('pw', FAST), failure)
  await t.rejects(password.verifyPassword('pw', good), failure)
})
