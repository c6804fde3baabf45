const BEARER_PREFIX = /^bearer +/i

/** What follows `Bearer ` in an Authorization header (the scheme name is case-insensitive); undefined for another or no scheme. */
export function bearerToken (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const prefix = BEARER_PREFIX.exec(header)
  return prefix === null ? undefined : header.slice(prefix[0].length)
}
