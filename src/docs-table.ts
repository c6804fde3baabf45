/**
 * A generated table on a docs page sits between the markers `<!-- name:start -->` and `<!-- name:end -->`; the
 * page's other text is written by hand. Used by `npm run settings` and `npm run errors`, and by their tests, which
 * fail when a page's table is not the one its source generates.
 */
export function markers (name: string): { start: string, end: string } {
  return { start: `<!-- ${name}:start -->`, end: `<!-- ${name}:end -->` }
}

/** `page` (the text of `path`) with its table `name` replaced by `table`. */
export function replaceTable (page: string, path: string, name: string, table: string): string {
  const { start, end } = markers(name)
  const from = page.indexOf(start)
  const to = page.indexOf(end)
  if (from === -1 || to < from) throw new Error(`${path} needs the markers ${start} and ${end}`)
  return `${page.slice(0, from + start.length)}\n${table}\n${page.slice(to)}`
}
