package testutil

import "sync"

// Log is a list that goroutines append to and a test takes from: the errors
// an error handler got, the calls an Observer heard. The zero value is
// ready.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add appends v.
func (l *Log[T]) Add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
}

// Take returns what was added since the last Take, and forgets it.
func (l *Log[T]) Take() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	items := l.items
	l.items = nil
	return items
}
