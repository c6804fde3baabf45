/**
 * The requests the benchmark sends: the throughput scenarios run on the
 * project and the baseline alike, the login scenario, and the requests the
 * other groups build on (a valid token's GET /profile, the login, one per id).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import { createCat, JSON_HEADERS, type LoadRequest, type LoadSettings, type Workload } from './load.js'

export interface Scenario {
  id: string
  title: string
  /** Highest allowed CPU-per-request ratio, project / baseline; undefined for none. */
  target: number | undefined
  /** Cats created before the warm-up. */
  cats: number
  /** Tokens logged out before the warm-up, so that the denylist holds this many entries. */
  revoked?: number
  /** A fresh workload per server (paths rotate independently). */
  workload: () => Workload
  settings: Partial<LoadSettings>
}

function scenario (id: string, title: string, target: number | undefined, cats: number,
  workload: () => Workload, settings: Partial<LoadSettings> = {}, revoked?: number): Scenario {
  return { id, title, target, cats, workload, settings, ...(revoked !== undefined && { revoked }) }
}

/** A token for the demo user john, valid for an hour, as the service issues it when signed with its secret. */
export const signToken = (key: string): string =>
  createSigner({ key, algorithm: 'HS256', expiresIn: 3_600_000 })({ sub: 1, username: 'john', jti: randomUUID(), sid: randomUUID() })

export const profileRequest = (token: string): LoadRequest => ({ method: 'GET', path: '/profile', headers: { authorization: `Bearer ${token}` } })

export const loginRequest: LoadRequest = {
  method: 'POST', path: '/auth/login', headers: JSON_HEADERS, body: JSON.stringify({ username: 'john', password: 'changeme' })
}

/** One request per id: 1..n in turn, or `count` ids drawn uniformly from 1..n. */
export function perId (template: Omit<LoadRequest, 'path'>, n: number, count?: number): LoadRequest[] {
  const ids = count === undefined
    ? Array.from({ length: n }, (_, index) => index + 1)
    : Array.from({ length: count }, () => 1 + Math.floor(Math.random() * n))
  return ids.map((id) => ({ ...template, path: `/cats/${id}` }))
}

const updateBody = JSON.stringify({ age: 4, name: 'Felix' })

/** The CPU ratio the service may reach on the routes a client calls most. */
const ROUTE_TARGET = 1.10

/** DELETE /cats/1, POST, DELETE /cats/2, POST, …: each pair removes a cat and adds one, so the collection keeps its size. */
function deleteCreatePairs (n: number): LoadRequest[] {
  return Array.from({ length: n }, (_, index) => [{ method: 'DELETE', path: `/cats/${index + 1}` }, createCat]).flat()
}

/**
 * The scenarios with a CPU target, in the order they run; `secret` is the servers' JWT secret. Each workload signs
 * its token afresh: a token lives an hour, and a full run takes longer.
 */
export function throughputScenarios (secret: string): Scenario[] {
  // Well-formed, but signed with another secret: the 401 path after the signature check.
  const otherSecret = randomBytes(32).toString('hex')
  const validProfile = (): Workload => ({ requests: [profileRequest(signToken(secret))] })
  return [
    scenario('profile', 'GET /profile', ROUTE_TARGET, 0, validProfile),
    scenario('profile-revoked', 'GET /profile, 10,000 tokens logged out', ROUTE_TARGET, 0, validProfile, {}, 10_000),
    scenario('profile-bad-token', 'GET /profile, bad token (401)', ROUTE_TARGET, 0,
      () => ({ requests: [profileRequest(signToken(otherSecret))] })),
    scenario('cat-read', 'GET /cats/:id (1,000 cats)', ROUTE_TARGET, 1_000, () => ({ requests: perId({ method: 'GET' }, 1_000) })),
    scenario('cats-list', 'GET /cats (100 cats)', 0.8, 100, () => ({ requests: [{ method: 'GET', path: '/cats' }] })),
    scenario('cats-list-10k', 'GET /cats (10,000 cats)', 0.8, 10_000,
      () => ({ requests: [{ method: 'GET', path: '/cats' }] }), { connections: 10 }),
    scenario('cat-create', 'POST /cats', ROUTE_TARGET, 0, () => ({ requests: [createCat] })),
    scenario('cat-update', 'PUT /cats/:id, random ids (1,000 cats)', ROUTE_TARGET, 1_000,
      () => ({ requests: perId({ method: 'PUT', headers: JSON_HEADERS, body: updateBody }, 1_000, 1_000) })),
    scenario('cat-delete-create', 'DELETE /cats/:id + POST /cats pairs (1,000 cats)', ROUTE_TARGET, 1_000,
      () => ({ requests: deleteCreatePairs(2_000) }))
  ]
}

// Bound by scrypt (about 0.3 s of CPU per hash here): a fixed number of logins, all completed.
export const loginScenario = scenario('login', 'POST /auth/login', undefined, 0, () => ({ requests: [loginRequest] }), { connections: 2 })

export function findScenario (scenarios: Scenario[], id: string): Scenario {
  const found = scenarios.find((s) => s.id === id)
  if (found === undefined) throw new Error(`no ${id} scenario`)
  return found
}
