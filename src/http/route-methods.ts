import type { RouteOptions } from 'fastify'

/**
 * The methods the service serves at each of its paths, for 405 answers (RFC 9110 §15.5.6): a request whose path
 * one of the service's routes has, with a method none of them serves, is a 405 with `Allow`; any other request that
 * no route matched stays a 404. The routes are collected as they are registered (an onRoute hook in the service's
 * own scope, so only the service's routes, each with the host's prefix), HEAD included where Fastify adds it to a
 * GET, and a prefix's root with and without its final `/`, as Fastify serves it. A route ending in `*` (CORS's preflight route, the docs' files) adds its methods to the paths it covers but makes none known.
 */

/** The order `Allow` lists methods in. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

interface RoutePattern {
  pattern: RegExp
  methods: Set<string>
  wildcard: boolean
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** A route URL as a regular expression: `:name` is one segment, a final `*` anything. */
function patternOf (url: string): { pattern: RegExp, wildcard: boolean } {
  const wildcard = url.endsWith('*')
  const path = wildcard ? url.slice(0, -1) : url
  const body = path.split('/').map((segment) => segment.startsWith(':') ? '[^/]+' : escaped(segment)).join('/')
  return { pattern: new RegExp(`^${body}${wildcard ? '.*' : ''}$`), wildcard }
}

export class RouteMethods {
  readonly #routes = new Map<string, RoutePattern>()

  /** Records a route as it is registered: pass it to `onRoute`. */
  readonly add = (route: Pick<RouteOptions, 'method' | 'url' | 'prefixTrailingSlash'> & { prefix: string }): void => {
    // A prefix's root is served with and without its slash (Fastify's default, 'both'), though only one reaches onRoute.
    const both = route.url === route.prefix && route.prefix !== '' && (route.prefixTrailingSlash ?? 'both') === 'both'
    for (const url of both ? [route.url, `${route.url}/`] : [route.url]) {
      const entry = this.#routes.get(url) ?? { ...patternOf(url), methods: new Set<string>() }
      for (const method of [route.method].flat()) entry.methods.add(method.toUpperCase())
      this.#routes.set(url, entry)
    }
  }

  /** The methods served at this path (without its query), in a stable order; undefined when no route has the path. */
  allowed (path: string): string[] | undefined {
    const methods = new Set<string>()
    let known = false
    for (const { pattern, methods: served, wildcard } of this.#routes.values()) {
      if (!pattern.test(path)) continue
      known ||= !wildcard
      for (const method of served) methods.add(method)
    }
    if (!known) return undefined
    return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
  }
}

/** A method's place in `Allow`; methods outside the usual ones go last, alphabetically. */
const rank = (method: string): number => {
  const index = METHOD_ORDER.indexOf(method)
  return index === -1 ? METHOD_ORDER.length : index
}
