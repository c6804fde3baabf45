import t from 'tap'
import { ifMatchVersions, ifNoneMatchVersions, strongTag, weakTag } from '../../src/http/entity-tags.js'

t.test('tags are versions in quotes, weak ones with W/', async (t) => {
  t.equal(strongTag('12'), '"12"')
  t.equal(weakTag('12'), 'W/"12"')
})

t.test('If-Match: strong comparison, * for any, nothing that is not a tag', async (t) => {
  t.equal(ifMatchVersions(undefined), undefined, 'no header, no condition')
  t.equal(ifMatchVersions('*'), '*')
  t.equal(ifMatchVersions(' * '), '*')
  t.strictSame(ifMatchVersions('"a"'), ['a'])
  t.strictSame(ifMatchVersions('"a", "b,c" ,"d"'), ['a', 'b,c', 'd'], 'a comma inside a tag is part of it')
  t.strictSame(ifMatchVersions(', "a",, "b" ,'), ['a', 'b'], 'empty list elements are skipped (RFC 9110 §5.6.1.2)')
  t.strictSame(ifMatchVersions('W/"a", "b"'), ['b'], 'a weak tag never matches')
  t.strictSame(ifMatchVersions('a'), [], 'an unquoted value is no tag: nothing matches')
  t.strictSame(ifMatchVersions('"a" b, "c"'), [], 'the list ends where it stops being tags')
  t.strictSame(ifMatchVersions(''), [])
})

t.test('If-None-Match: weak comparison', async (t) => {
  t.equal(ifNoneMatchVersions(undefined), undefined)
  t.equal(ifNoneMatchVersions('*'), '*')
  t.strictSame(ifNoneMatchVersions('"0", W/"1"'), ['0', '1'], 'W/ does not matter')
  t.strictSame(ifNoneMatchVersions('1'), [], 'unquoted is no tag')
})
