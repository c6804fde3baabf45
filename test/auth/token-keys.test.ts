import { createSecretKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { join } from 'node:path'
import t from 'tap'
import { calculateJwkThumbprint, exportJWK, SignJWT } from 'jose'
import { createSigner } from 'fast-jwt'
import { loadConfig, type ConfigInput } from '../../src/config.js'
import { keyedVerify, thumbprint, tokenKeys } from '../../src/auth/tokens/token-keys.js'
import { verifyOptions } from '../../src/auth/tokens/jwt-options.js'

const SECRET = 'a-test-secret-that-is-32-chars-!'
const pem = (key: KeyObject, type: 'pkcs8' | 'spki'): string => key.export({ format: 'pem', type }).toString()

const pairs = {
  EdDSA: generateKeyPairSync('ed25519'),
  ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  RS256: generateKeyPairSync('rsa', { modulusLength: 2048 })
}
const keysOf = (config: ConfigInput) => tokenKeys(loadConfig(config))
const claims = { sub: 1, username: 'john' }

t.test('the thumbprint of RFC 7638, section 3.1', async (t) => {
  t.equal(thumbprint({
    kty: 'RSA',
    n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
    e: 'AQAB',
    alg: 'RS256',
    kid: '2011-04-29'
  }), 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs')
})

t.test('the thumbprint of RFC 8037, appendix A.3 (an Ed25519 key), as the OpenAPI example shows it', async (t) => {
  t.equal(thumbprint({ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }), 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k')
})

for (const [algorithm, { privateKey, publicKey }] of Object.entries(pairs)) {
  t.test(`${algorithm}: the key signs, names itself by its thumbprint and is published`, async (t) => {
    const keys = keysOf({ JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: pem(privateKey, 'pkcs8') })
    const jwk = await exportJWK(publicKey)
    t.equal(keys.algorithm, algorithm)
    t.equal(keys.kid, await calculateJwkThumbprint(jwk), 'the same thumbprint as jose computes')
    t.strictSame(keys.published, [{ ...jwk, kid: keys.kid, alg: algorithm, use: 'sig' }])
    t.equal(keys.refreshSecret, keys.signingKey, 'refresh tokens are proven with the private key when there is no JWT_SECRET')
    t.equal(keysOf({ JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: pem(privateKey, 'pkcs8'), JWT_SECRET: SECRET }).refreshSecret, SECRET)

    const verify = keyedVerify(keys, undefined, verifyOptions(loadConfig({ JWT_SECRET: SECRET })))
    const token = createSigner({ key: keys.signingKey, algorithm: keys.algorithm, kid: keys.kid, expiresIn: 60_000 })(claims)
    t.match(verify(token), claims)
    t.throws(() => verify(token.slice(0, -4) + 'AAAA'), 'a changed signature is refused')
  })
}

t.test('HS256: the secret signs, no kid, nothing of it published', async (t) => {
  const keys = keysOf({ JWT_SECRET: SECRET })
  t.strictSame(keys, { algorithm: 'HS256', signingKey: SECRET, kid: undefined, published: [], refreshSecret: SECRET })
  const next = pem(pairs.EdDSA.publicKey, 'spki')
  t.equal(keysOf({ JWT_SECRET: SECRET, JWT_VERIFY_KEYS: next }).published.length, 1, 'a next key is published before it signs')
})

t.test('the verifier picks the key by kid and refuses what no key of its own verifies', async (t) => {
  const options = verifyOptions(loadConfig({ JWT_SECRET: SECRET }))
  const signing = keysOf({ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY: pem(pairs.ES256.privateKey, 'pkcs8'), JWT_VERIFY_KEYS: pem(pairs.EdDSA.publicKey, 'spki') })
  const previous = keysOf({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: pem(pairs.EdDSA.privateKey, 'pkcs8') })
  const other = keysOf({ JWT_ALGORITHM: 'RS256', JWT_PRIVATE_KEY: pem(pairs.RS256.privateKey, 'pkcs8') })
  const sign = (keys: typeof signing, kid = keys.kid) => createSigner({ key: keys.signingKey, algorithm: keys.algorithm, kid, expiresIn: 60_000 })(claims)
  const hs256 = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 60_000 })(claims)

  const verify = keyedVerify(signing, undefined, options)
  t.match(verify(sign(signing)), claims, 'the signing key')
  t.match(verify(sign(previous)), claims, 'a verify key')
  t.throws(() => verify(sign(other)), 'an unknown kid')
  t.throws(() => verify(sign(other, signing.kid)), 'a known kid on a token another key signed')
  t.throws(() => verify(hs256), 'an HS256 token without JWT_SECRET')
  t.match(keyedVerify(signing, SECRET, options)(hs256), claims, 'an HS256 token while JWT_SECRET is set')
  t.throws(() => verify('not a token'), 'no header')
  t.throws(() => verify(`${Buffer.from('7').toString('base64url')}.e30.x`), 'a header that is not an object')
  t.throws(() => verify(`${Buffer.from('null').toString('base64url')}.e30.x`), 'a null header')
  t.throws(() => verify(`${Buffer.from('{"alg":"ES256","kid":7}').toString('base64url')}.e30.x`), 'a kid that is not a string')
  t.throws(() => verify(`${Buffer.from('{').toString('base64url')}.e30.x`), 'a header that is not JSON')

  // The public key as an HMAC secret: the classic algorithm confusion.
  const published = signing.published[0]
  const confused = await new SignJWT({ username: 'john' }).setSubject('1').setProtectedHeader({ alg: 'HS256', kid: published.kid }).setIssuedAt().setExpirationTime('1m')
    .sign(createSecretKey(Buffer.from(pem(pairs.ES256.publicKey, 'spki'))))
  t.throws(() => verify(confused), 'an HS256 token naming an asymmetric key')
})

t.test('keys from files', async (t) => {
  const dir = t.testdir({ 'private.pem': pem(pairs.EdDSA.privateKey, 'pkcs8'), 'verify.pem': pem(pairs.ES256.publicKey, 'spki') + pem(pairs.RS256.publicKey, 'spki') })
  const keys = keysOf({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: join(dir, 'private.pem'), JWT_VERIFY_KEYS_FILE: join(dir, 'verify.pem') })
  t.strictSame(keys.published.map((key) => key.alg), ['EdDSA', 'ES256', 'RS256'], 'the signing key first, then the verify keys in order')
  t.equal(keysOf({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: join(dir, 'private.pem'), JWT_VERIFY_KEYS: pem(pairs.EdDSA.publicKey, 'spki') }).published.length, 1,
    'the signing key given again as a verify key is published once')
})

t.test('settings that cannot work are refused at start, naming the setting and never a key', async (t) => {
  const dir = t.testdir({})
  const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 })
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' })
  const cases: Array<[string, ConfigInput, RegExp]> = [
    ['no key', { JWT_ALGORITHM: 'EdDSA' }, /JWT_PRIVATE_KEY \(or JWT_PRIVATE_KEY_FILE\) is required with JWT_ALGORITHM=EdDSA/],
    ['both forms', { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: 'x', JWT_PRIVATE_KEY_FILE: 'y' }, /JWT_PRIVATE_KEY and env\/JWT_PRIVATE_KEY_FILE are both set/],
    ['missing file', { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: join(dir, 'absent.pem') }, /JWT_PRIVATE_KEY_FILE cannot be read: ENOENT/],
    ['not PEM', { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: 'hunter2' }, /JWT_PRIVATE_KEY is not a PEM private key/],
    ['another algorithm', { JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY: pem(pairs.EdDSA.privateKey, 'pkcs8') }, /matching JWT_ALGORITHM=ES256/],
    ['short RSA', { JWT_ALGORITHM: 'RS256', JWT_PRIVATE_KEY: pem(rsa1024.privateKey, 'pkcs8') }, /RSA of 2048 bits or more/],
    ['a private key with HS256', { JWT_SECRET: SECRET, JWT_PRIVATE_KEY: pem(pairs.EdDSA.privateKey, 'pkcs8') }, /JWT_PRIVATE_KEY is set but JWT_ALGORITHM is HS256/],
    ['no PEM among the verify keys', { JWT_SECRET: SECRET, JWT_VERIFY_KEYS: 'hunter2' }, /JWT_VERIFY_KEYS must hold PEM public keys/],
    ['a private key among the verify keys', { JWT_SECRET: SECRET, JWT_VERIFY_KEYS: pem(pairs.ES256.publicKey, 'spki') + pem(pairs.EdDSA.privateKey, 'pkcs8') }, /JWT_VERIFY_KEYS key 2 is a PRIVATE KEY: give public keys only/],
    ['an unsupported verify key', { JWT_SECRET: SECRET, JWT_VERIFY_KEYS: pem(p384.publicKey, 'spki') }, /JWT_VERIFY_KEYS key 1 must be an Ed25519/]
  ]
  for (const [name, config, message] of cases) {
    const error = t.throws(() => keysOf(config), name)
    t.match(String(error), message, name)
    t.notMatch(String(error), /hunter2|[A-Za-z0-9+/]{40}/, `${name}: no key material in the message`)
  }
  t.throws(() => loadConfig({}), /must have required property 'JWT_SECRET'/, 'HS256 still needs its secret')
})
