package scheduler

// Trigger tells what made a key's run pending: the add that set the run's
// ready time (the same add whose WaitReason the run has). It is a small,
// bounded set, for a span attribute: why the reconcile ran.
//
// The scheduler knows the kind of an add (AddAfter, AddRateLimited); what
// an event handler saw (an object created, updated, deleted, an informer's
// resync or initial list) it is told with AddOptions.Trigger.
type Trigger uint8

const (
	// TriggerAdd: a plain add that said nothing more (Add, AddContext, or
	// AddWithOptions without Trigger).
	TriggerAdd Trigger = iota
	// TriggerCreate: an event handler saw the object created (an
	// informer's add event, controller-runtime's create event).
	TriggerCreate
	// TriggerUpdate: an event handler saw the object changed.
	TriggerUpdate
	// TriggerDelete: an event handler saw the object deleted.
	TriggerDelete
	// TriggerGeneric: controller-runtime's generic event (a channel
	// source, for changes outside the cluster).
	TriggerGeneric
	// TriggerResync: an update event that changed nothing (the same
	// resource version): the informer's periodic resync.
	TriggerResync
	// TriggerInitialList: a create event from the informer's initial list,
	// when a controller starts or its watch is re-established.
	TriggerInitialList
	// TriggerRequeueAfter: an add with a delay the caller chose (AddAfter,
	// AddOptions.After; a reconcile's RequeueAfter).
	TriggerRequeueAfter
	// TriggerBackoff: an add through the rate limiter (AddRateLimited,
	// AddOptions.RateLimited): a reconcile that failed, or asked for a
	// requeue.
	TriggerBackoff
	numTriggers
)

// triggerNames are the results of Trigger.String.
var triggerNames = [numTriggers]string{
	TriggerAdd:          "add",
	TriggerCreate:       "create",
	TriggerUpdate:       "update",
	TriggerDelete:       "delete",
	TriggerGeneric:      "generic",
	TriggerResync:       "resync",
	TriggerInitialList:  "initial_list",
	TriggerRequeueAfter: "requeue_after",
	TriggerBackoff:      "backoff",
}

// String returns the trigger as a short lower-case word, suitable as a span
// attribute value: add, create, update, delete, generic, resync,
// initial_list, requeue_after or backoff ("unknown" for a value that is
// none of the constants).
func (t Trigger) String() string {
	if t < numTriggers {
		return triggerNames[t]
	}
	return "unknown"
}

// triggerOf returns the trigger of an add of kind that said none.
func triggerOf(kind addKind) Trigger {
	switch kind {
	case addDelayed:
		return TriggerRequeueAfter
	case addRateLimited:
		return TriggerBackoff
	}
	return TriggerAdd
}
