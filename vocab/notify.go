package vocab

// NotifyEvent is what a notification tells (§13): the event field of a webhook's JSON body and
// of the outbox row.
type NotifyEvent string

const (
	EventRunFailed     NotifyEvent = "run_failed"     // a run ended failed (a DAG's on_failure)
	EventRunSucceeded  NotifyEvent = "run_succeeded"  // a run ended success (a DAG's on_success)
	EventTaskFailed    NotifyEvent = "task_failed"    // a task instance failed with no try left (on_failure)
	EventTaskSucceeded NotifyEvent = "task_succeeded" // a task instance succeeded (on_success)
	EventTaskRetry     NotifyEvent = "task_retry"     // a try failed and the task will retry (on_retry)
	EventQueueWait     NotifyEvent = "queue_wait"     // an entry still waits for admission after on_queue_wait.after
	EventDeadlineMiss  NotifyEvent = "deadline_miss"  // a run still open at its deadline (on_deadline_miss)
	EventTest          NotifyEvent = "test"           // a sample sent by "send test" (notifiers test)
)

// NotifyEvents lists every event.
func NotifyEvents() []NotifyEvent {
	return []NotifyEvent{EventRunFailed, EventRunSucceeded, EventTaskFailed, EventTaskSucceeded, EventTaskRetry,
		EventQueueWait, EventDeadlineMiss, EventTest}
}

// Valid reports whether e is an event.
func (e NotifyEvent) Valid() bool { return in(e, NotifyEvents()) }

// DeliveryState is the state of one notification in the outbox (§13): one event for one
// notifier.
//
//	pending ──claimed──▶ sending ──answered──▶ delivered
//	   ▲                   │  └──last try failed──▶ failed
//	   └──try failed, or the sender's lease lapsed──┘
type DeliveryState string

const (
	DeliveryPending   DeliveryState = "pending"   // waits for its next try (next_at)
	DeliverySending   DeliveryState = "sending"   // a daemon claimed it under a lease and sends it
	DeliveryDelivered DeliveryState = "delivered" // the receiver took it
	DeliveryFailed    DeliveryState = "failed"    // every try failed; last_error says why
)

// DeliveryStates lists every delivery state.
func DeliveryStates() []DeliveryState {
	return []DeliveryState{DeliveryPending, DeliverySending, DeliveryDelivered, DeliveryFailed}
}

// Valid reports whether s is a delivery state.
func (s DeliveryState) Valid() bool { return in(s, DeliveryStates()) }

// Terminal reports whether no try follows.
func (s DeliveryState) Terminal() bool { return s == DeliveryDelivered || s == DeliveryFailed }
