package otelqueue

import (
	"github.com/otelqueue/otelqueue/inspect"
)

// maxDecisions is the number of an adaptive pool's last decisions kept for
// the Inspector.
const maxDecisions = 8

// decisionLog keeps a pool's last maxDecisions decisions. The pool's lock
// guards it; a decision is taken once an interval, so it costs nothing on
// a queue's hot path.
type decisionLog struct {
	ring [maxDecisions]inspect.Decision
	next int // where the next decision goes
	n    int // decisions kept, at most maxDecisions
}

func (l *decisionLog) add(d inspect.Decision) {
	l.ring[l.next] = d
	l.next = (l.next + 1) % maxDecisions
	l.n = min(l.n+1, maxDecisions)
}

// last returns the decisions kept, the latest first.
func (l *decisionLog) last() []inspect.Decision {
	out := make([]inspect.Decision, 0, l.n)
	for i := 1; i <= l.n; i++ {
		out = append(out, l.ring[(l.next-i+maxDecisions)%maxDecisions])
	}
	return out
}
