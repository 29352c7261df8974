package dag

// TriggerRule decides when a task may run given its upstream tasks' states (§3.2).
type TriggerRule string

const (
	AllSuccess              TriggerRule = "all_success"
	AllFailed               TriggerRule = "all_failed"
	AllDone                 TriggerRule = "all_done"
	AllDoneMinOneSuccess    TriggerRule = "all_done_min_one_success"
	AllSkipped              TriggerRule = "all_skipped"
	OneSuccess              TriggerRule = "one_success"
	OneFailed               TriggerRule = "one_failed"
	OneDone                 TriggerRule = "one_done"
	NoneFailed              TriggerRule = "none_failed"
	NoneFailedMinOneSuccess TriggerRule = "none_failed_min_one_success"
	NoneSkipped             TriggerRule = "none_skipped"
	Always                  TriggerRule = "always"
)
