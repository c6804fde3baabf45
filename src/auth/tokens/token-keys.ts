import { createHash, createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Type, type Static } from '@sinclair/typebox'
import { createVerifier, type VerifierOptions } from 'fast-jwt'
import type { Config } from '../../config.js'

export type AsymmetricAlgorithm = 'EdDSA' | 'ES256' | 'RS256'
export type Algorithm = 'HS256' | AsymmetricAlgorithm

/** A public key as the JWKS publishes it (RFC 7517): the members of its key type, named by its RFC 7638 thumbprint. */
export const PublicKey = Type.Object({
  kty: Type.String({ description: 'Key type: `OKP` (Ed25519), `EC` (P-256) or `RSA`' }),
  kid: Type.String({ description: 'RFC 7638 thumbprint: the `kid` of the tokens this key verifies' }),
  alg: Type.Union([Type.Literal('EdDSA'), Type.Literal('ES256'), Type.Literal('RS256')]),
  use: Type.Literal('sig'),
  crv: Type.Optional(Type.String()),
  x: Type.Optional(Type.String()),
  y: Type.Optional(Type.String()),
  n: Type.Optional(Type.String()),
  e: Type.Optional(Type.String())
})
export type PublishedKey = Static<typeof PublicKey>

/** What signs the service's access tokens and what verifies them. */
export interface TokenKeys {
  algorithm: Algorithm
  /** The HS256 secret, or the private key as PEM. */
  signingKey: string
  /** The signing key's thumbprint; HS256 tokens carry none (a thumbprint of a secret would publish a hash of it). */
  kid: string | undefined
  /** The public keys of the signing key and of JWT_VERIFY_KEYS, for /.well-known/jwks.json. */
  published: PublishedKey[]
  /** The secret refresh tokens are proven with: JWT_SECRET when set, else the private key. */
  refreshSecret: string
}

/** The members RFC 7638 hashes for each key type, in their lexicographic order. */
const THUMBPRINT_MEMBERS: Record<string, Array<keyof JsonWebKey>> = { OKP: ['crv', 'kty', 'x'], EC: ['crv', 'kty', 'x', 'y'], RSA: ['e', 'kty', 'n'] }

/** The RFC 7638 thumbprint of a public JWK: SHA-256 of its required members as canonical JSON, base64url. */
export function thumbprint (jwk: JsonWebKey): string {
  const members = THUMBPRINT_MEMBERS[String(jwk.kty)]
  const canonical = `{${members.map((name) => `${JSON.stringify(name)}:${JSON.stringify(jwk[name])}`).join(',')}}`
  return createHash('sha256').update(canonical).digest('base64url')
}

/** The algorithm a key signs with, or undefined for a key the service does not accept. */
function algorithmOf (key: KeyObject): AsymmetricAlgorithm | undefined {
  const type = key.asymmetricKeyType
  const { namedCurve, modulusLength } = { ...key.asymmetricKeyDetails }
  if (type === 'ed25519') return 'EdDSA'
  if (type === 'ec' && namedCurve === 'prime256v1') return 'ES256'
  if (type === 'rsa' && Number(modulusLength) >= 2048) return 'RS256'
  return undefined
}

const KEY_KINDS = 'an Ed25519 (EdDSA), P-256 (ES256) or RSA of 2048 bits or more (RS256) key'

function published (key: KeyObject, alg: AsymmetricAlgorithm): PublishedKey {
  const { kty, crv, x, y, n, e } = key.export({ format: 'jwk' })
  const jwk = {
    kty: String(kty),
    ...(crv !== undefined && { crv }),
    ...(x !== undefined && { x }),
    ...(y !== undefined && { y }),
    ...(n !== undefined && { n }),
    ...(e !== undefined && { e })
  }
  return { ...jwk, kid: thumbprint(jwk), alg, use: 'sig' }
}

/** The value of a setting given inline or as a file (at most one of the two). */
function inlineOrFile (config: Config, name: 'JWT_PRIVATE_KEY' | 'JWT_VERIFY_KEYS'): string | undefined {
  const inline = config[name]
  const file = config[`${name}_FILE`]
  if (inline !== undefined && file !== undefined) throw new Error(`env/${name} and env/${name}_FILE are both set: set one`)
  if (file === undefined) return inline
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    throw new Error(`env/${name}_FILE cannot be read: ${String((error as NodeJS.ErrnoException).code)}`)
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[^-]+-----END \1-----/g

/** The keys of JWT_VERIFY_KEYS: public keys only (a private key there would be a key that may sign). */
function verifyKeys (pem: string | undefined): PublishedKey[] {
  if (pem === undefined) return []
  const blocks = [...pem.matchAll(PEM_BLOCK)]
  if (blocks.length === 0) throw new Error('env/JWT_VERIFY_KEYS must hold PEM public keys (-----BEGIN PUBLIC KEY-----)')
  return blocks.map(([block, label], index) => {
    if (label !== 'PUBLIC KEY') throw new Error(`env/JWT_VERIFY_KEYS key ${index + 1} is a ${label}: give public keys only`)
    const key = createPublicKey(block)
    const alg = algorithmOf(key)
    if (alg === undefined) throw new Error(`env/JWT_VERIFY_KEYS key ${index + 1} must be ${KEY_KINDS}`)
    return published(key, alg)
  })
}

/** Reads and checks the keys of the settings; throws an Error naming the setting that is wrong. */
export function tokenKeys (config: Config): TokenKeys {
  const algorithm = config.JWT_ALGORITHM as Algorithm
  const privatePem = inlineOrFile(config, 'JWT_PRIVATE_KEY')
  const extra = verifyKeys(inlineOrFile(config, 'JWT_VERIFY_KEYS'))
  if (algorithm === 'HS256') {
    if (privatePem !== undefined) throw new Error('env/JWT_PRIVATE_KEY is set but JWT_ALGORITHM is HS256: set JWT_ALGORITHM to the key\'s algorithm')
    // The schema requires JWT_SECRET with HS256.
    const secret = config.JWT_SECRET as string
    return { algorithm, signingKey: secret, kid: undefined, published: extra, refreshSecret: secret }
  }
  if (privatePem === undefined) throw new Error(`env/JWT_PRIVATE_KEY (or JWT_PRIVATE_KEY_FILE) is required with JWT_ALGORITHM=${algorithm}`)
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(privatePem)
  } catch {
    throw new Error('env/JWT_PRIVATE_KEY is not a PEM private key')
  }
  if (algorithmOf(privateKey) !== algorithm) throw new Error(`env/JWT_PRIVATE_KEY must be ${KEY_KINDS}, matching JWT_ALGORITHM=${algorithm}`)
  const signing = published(createPublicKey(privateKey), algorithm)
  const signingKey = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  return {
    algorithm,
    signingKey,
    kid: signing.kid,
    published: [signing, ...extra.filter((key) => key.kid !== signing.kid)],
    refreshSecret: config.JWT_SECRET ?? signingKey
  }
}

/** A published key as the PEM fast-jwt takes. */
export const publicPem = (jwk: PublishedKey): string =>
  createPublicKey({ key: jwk, format: 'jwk' }).export({ format: 'pem', type: 'spki' }).toString()

/** The header of a compact JWS, or undefined when it is not one. */
function headerOf (token: string): { kid?: unknown } | undefined {
  const end = token.indexOf('.')
  if (end <= 0) return undefined
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, end), 'base64url').toString())
    return typeof header === 'object' && header !== null ? header : undefined
  } catch {
    return undefined
  }
}

/**
 * A synchronous verify for the guard: one fast-jwt verifier per published key, chosen by the token's `kid`,
 * and one for HS256 tokens (no `kid`) while JWT_SECRET is set. A token whose `kid` is unknown is refused.
 * Each verifier takes only its key's algorithm, so no key can be used as another algorithm's.
 */
export function keyedVerify (keys: Pick<TokenKeys, 'published'>, secret: string | undefined, options: Omit<Partial<VerifierOptions>, 'key' | 'algorithms'>): (token: string) => unknown {
  const byKid = new Map(keys.published.map((jwk) => [jwk.kid, createVerifier({ ...options, key: publicPem(jwk), algorithms: [jwk.alg] })]))
  const hs256 = secret === undefined ? undefined : createVerifier({ ...options, key: secret, algorithms: ['HS256'] })
  return (token) => {
    const kid = headerOf(token)?.kid
    const verify = kid === undefined ? hs256 : typeof kid === 'string' ? byKid.get(kid) : undefined
    if (verify === undefined) throw new Error('no key for this token')
    return verify(token)
  }
}
