package otelqueue

import "time"

// InspectedDecision is one of the last decisions of a queue's adaptive
// pool, as the Inspector shows them: every decision, a change of the
// count or a hold, as its "adaptive workers" log line says it.
type InspectedDecision struct {
	At time.Time `json:"at"`
	// From and To are the count before and after (equal for a hold).
	From int `json:"from"`
	To   int `json:"to"`
	// Reason is the rule's reason (one of the Reason constants); Detail
	// the figures that decided it.
	Reason Reason `json:"reason"`
	Detail string `json:"detail"`
}

// MaxDecisions is the number of an adaptive pool's last decisions kept for
// the Inspector.
const MaxDecisions = 8

// decisionLog keeps a pool's last MaxDecisions decisions. The pool's lock
// guards it; a decision is taken once an interval, so it costs nothing on
// a queue's hot path.
type decisionLog struct {
	ring [MaxDecisions]InspectedDecision
	next int // where the next decision goes
	n    int // decisions kept, at most MaxDecisions
}

func (l *decisionLog) add(d InspectedDecision) {
	l.ring[l.next] = d
	l.next = (l.next + 1) % MaxDecisions
	l.n = min(l.n+1, MaxDecisions)
}

// last returns the decisions kept, the latest first.
func (l *decisionLog) last() []InspectedDecision {
	out := make([]InspectedDecision, 0, l.n)
	for i := 1; i <= l.n; i++ {
		out = append(out, l.ring[(l.next-i+MaxDecisions)%MaxDecisions])
	}
	return out
}
