import t from 'tap'
import { checkLargeList } from '../support/large-list.js'

// test/routes/cats-large-list.test.ts at a million cats: one whole list of 60 MB.
const CATS = 1_000_000

t.test(`a full list of ${CATS.toLocaleString('en')} cats never holds the event loop for more than 50 ms; other requests are answered meanwhile`, async (t) => {
  await checkLargeList(t, CATS)
})
