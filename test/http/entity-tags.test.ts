import t from 'tap'
import { ifMatchCondition, noneMatch, strongTag, weakTag } from '../../src/http/entity-tags.js'

t.test('tags are versions in quotes, weak ones with W/', async (t) => {
  t.equal(strongTag('12'), '"12"')
  t.equal(weakTag('12'), 'W/"12"')
})

t.test('If-Match: strong comparison, * for any, nothing that is not a tag', async (t) => {
  t.equal(ifMatchCondition(undefined), undefined, 'no header, no condition')
  t.equal(ifMatchCondition('*'), '*')
  t.equal(ifMatchCondition(' * '), '*')
  t.strictSame(ifMatchCondition('"a"'), ['a'])
  t.strictSame(ifMatchCondition('"a", "b,c" ,"d"'), ['a', 'b,c', 'd'], 'a comma inside a tag is part of it')
  t.strictSame(ifMatchCondition('W/"a", "b"'), ['b'], 'a weak tag never matches')
  t.strictSame(ifMatchCondition('a'), [], 'an unquoted value is no tag: nothing matches')
  t.strictSame(ifMatchCondition('"a" b, "c"'), [], 'the list ends where it stops being tags')
  t.strictSame(ifMatchCondition(''), [])
})

t.test('If-None-Match: weak comparison', async (t) => {
  t.notOk(noneMatch(undefined, '1'))
  t.ok(noneMatch('"1"', '1'))
  t.ok(noneMatch('W/"1"', '1'), 'weak matches strong')
  t.ok(noneMatch('"0", W/"1"', '1'))
  t.ok(noneMatch('*', '1'))
  t.notOk(noneMatch('"2"', '1'))
  t.notOk(noneMatch('1', '1'), 'unquoted is no tag')
})
