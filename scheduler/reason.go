package scheduler

// WaitReason tells why a key was not handed to a worker the moment it was
// added. It is the reason that decided the key's ready time.
type WaitReason uint8

const (
	// WaitImmediate: the key was added to run at once; any wait is congestion
	// (no worker was free).
	WaitImmediate WaitReason = iota
	// WaitDelayed: the key was added with AddAfter and a positive delay.
	WaitDelayed
	// WaitRateLimited: the key was added with AddRateLimited and waited for the
	// rate limiter's backoff, usually a retry after an error.
	WaitRateLimited
	// WaitDebounced: the key waited for the debounce window (see
	// Config.Debounce).
	WaitDebounced
	// WaitHeld: the key was added while a worker was processing it and was
	// held until that worker called Done.
	WaitHeld
)

// waitReasonNames are the results of WaitReason.String.
var waitReasonNames = [...]string{
	WaitImmediate:   "immediate",
	WaitDelayed:     "delayed",
	WaitRateLimited: "rate_limited",
	WaitDebounced:   "debounced",
	WaitHeld:        "held",
}

// String returns the reason as a short lower-case word, suitable as a span
// attribute value: immediate, delayed, rate_limited, debounced or held.
func (r WaitReason) String() string {
	if int(r) < len(waitReasonNames) {
		return waitReasonNames[r]
	}
	return "unknown"
}
