/** The requests the bench sends, the same to the service and the baseline, and each scenario's target. */
import { randomBytes, randomUUID } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import { createCat, JSON_HEADERS, type LoadRequest } from './load.js'

export interface Scenario {
  id: string
  title: string
  /** The most server CPU per request the service may use, as a multiple of the baseline's; undefined: no target. */
  target?: number
  /** Cats created first. */
  cats: number
  /** Tokens logged out first, so that the denylist holds that many. */
  revoked?: number
  /** What each connection cycles through; built afresh per server, as a token lives an hour and a full run longer. */
  requests: () => LoadRequest[]
  connections?: number
  /** A run of exactly this many requests rather than of seconds (the login: it warms up with 2). */
  amount?: number
}

/** A token of the demo user john for an hour, as the service signs it with `key`. */
export const signToken = (key: string): string =>
  createSigner({ key, algorithm: 'HS256', expiresIn: 3_600_000 })({ sub: 1, username: 'john', jti: randomUUID(), sid: randomUUID() })

export const profileRequest = (token: string): LoadRequest => ({ method: 'GET', path: '/profile', headers: { authorization: `Bearer ${token}` } })

export const loginRequest: LoadRequest = {
  method: 'POST', path: '/auth/login', headers: JSON_HEADERS, body: JSON.stringify({ username: 'john', password: 'changeme' })
}

/** One request per id: `count` ids scattered over 1..n (a fixed sequence, the same in every run), or 1..n in turn. */
export function perId (template: Omit<LoadRequest, 'path'>, n: number, count?: number): LoadRequest[] {
  const ids = Array.from({ length: count ?? n }, (_, index) => count === undefined ? index + 1 : 1 + (index * 2_654_435_761 + 12_345) % n)
  return ids.map((id) => ({ ...template, path: `/cats/${id}` }))
}

/** The CPU ratio the service may reach on the routes a client calls most. */
const ROUTE = 1.10
/** GET /cats: the service sends an unchanged list's answer again (src/cats/list-paging.ts), the baseline joins the store's texts every time. */
const LIST = 0.8

/** The scenarios of the main comparison and of the instruction counts; `secret` is the servers' JWT secret. */
export function scenarios (secret: string): Scenario[] {
  // Well-formed but signed with another secret: the 401 after the signature check.
  const otherSecret = randomBytes(32).toString('hex')
  const profile = (): LoadRequest[] => [profileRequest(signToken(secret))]
  const list = (): LoadRequest[] => [{ method: 'GET', path: '/cats' }]
  // DELETE /cats/1, POST, DELETE /cats/2, POST, …: each pair removes a cat and adds one.
  const pairs = Array.from({ length: 2_000 }, (_, index): LoadRequest[] => [{ method: 'DELETE', path: `/cats/${index + 1}` }, createCat]).flat()
  return [
    { id: 'profile', title: 'GET /profile', target: ROUTE, cats: 0, requests: profile },
    { id: 'profile-revoked', title: 'GET /profile, 10,000 tokens logged out', target: ROUTE, cats: 0, revoked: 10_000, requests: profile },
    { id: 'profile-bad-token', title: 'GET /profile, bad token (401)', target: ROUTE, cats: 0, requests: () => [profileRequest(signToken(otherSecret))] },
    { id: 'cat-read', title: 'GET /cats/:id (1,000 cats)', target: ROUTE, cats: 1_000, requests: () => perId({ method: 'GET' }, 1_000) },
    { id: 'cats-list', title: 'GET /cats (100 cats)', target: LIST, cats: 100, requests: list },
    { id: 'cats-list-10k', title: 'GET /cats (10,000 cats)', target: LIST, cats: 10_000, requests: list, connections: 10 },
    { id: 'cat-create', title: 'POST /cats', target: ROUTE, cats: 0, requests: () => [createCat] },
    {
      id: 'cat-update',
      title: 'PUT /cats/:id, random ids (1,000 cats)',
      target: ROUTE,
      cats: 1_000,
      requests: () => perId({ method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify({ age: 4, name: 'Felix' }) }, 1_000, 1_000)
    },
    { id: 'cat-delete-create', title: 'DELETE /cats/:id + POST /cats pairs (1,000 cats)', target: ROUTE, cats: 1_000, requests: () => pairs },
    // Bound by scrypt (about 0.3 s of CPU per hash) by design: a fixed number of logins, each counted.
    { id: 'login', title: 'POST /auth/login', cats: 0, requests: () => [loginRequest], connections: 2, amount: 12 }
  ]
}
