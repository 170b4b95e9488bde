package traceparent

// MaxLen is the longest annotation value parsed at all, for the tests.
const MaxLen = maxLen
