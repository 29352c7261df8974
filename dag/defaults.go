package dag

// explicitFields lists the task fields whose zero value is meaningful when set on purpose
// (retry_delay: 0 retries at once, priority_weight: 0 is a valid weight).
type explicitFields uint8

const (
	explicitRetryDelay explicitFields = 1 << iota
	explicitPriorityWeight
)

// DefaultHTTPStatus is the status an HTTP sensor check waits for when none is given.
const DefaultHTTPStatus = 200

// ApplyDefaults fills every unset field of d and its tasks with the defaults of SPEC §2.1. It is
// used by both the YAML loader and the Go API, and applying it twice changes nothing. A task
// whose Kind is empty gets the kind of its single payload (command, bash, Go function, sensor
// or approval); Validate reports tasks with none or several.
func ApplyDefaults(d *DAG) {
	if d.MaxActiveRuns == 0 {
		d.MaxActiveRuns = DefaultMaxActiveRuns
	}
	if d.MaxActiveTasks == 0 {
		d.MaxActiveTasks = DefaultMaxActiveTasks
	}
	if d.ConcurrencyPolicy == "" {
		d.ConcurrencyPolicy = PolicyAllow
	}
	if d.Params == nil {
		d.Params = map[string]any{}
	}
	for _, t := range d.Tasks {
		applyTaskDefaults(t)
	}
}

func applyTaskDefaults(t *Task) {
	if t.Kind == "" {
		if kinds := t.payloadKinds(); len(kinds) == 1 {
			t.Kind = kinds[0]
		}
	}
	if t.TriggerRule == "" {
		t.TriggerRule = AllSuccess
	}
	if t.WeightRule == "" {
		t.WeightRule = WeightDownstream
	}
	if t.PriorityWeight == 0 && t.explicit&explicitPriorityWeight == 0 {
		t.PriorityWeight = DefaultPriorityWeight
	}
	if t.RetryDelay == 0 && t.explicit&explicitRetryDelay == 0 {
		t.RetryDelay = DefaultRetryDelay
	}
	if s := t.Sensor; s != nil {
		if s.Mode == "" {
			s.Mode = ModePoke
		}
		if s.PokeInterval == 0 {
			s.PokeInterval = DefaultPokeInterval
		}
		if s.Timeout == 0 {
			s.Timeout = DefaultSensorTimeout
		}
		if s.HTTP != nil && s.HTTP.Status == 0 {
			s.HTTP.Status = DefaultHTTPStatus
		}
	}
}

// payloadKinds lists the kinds whose payload the task carries, in a fixed order.
func (t *Task) payloadKinds() []Kind {
	var kinds []Kind
	if t.Command != nil {
		kinds = append(kinds, KindCommand)
	}
	if t.Bash != "" {
		kinds = append(kinds, KindBash)
	}
	if t.Func != nil {
		kinds = append(kinds, KindGo)
	}
	if t.Sensor != nil {
		kinds = append(kinds, KindSensor)
	}
	if t.Approval != nil {
		kinds = append(kinds, KindApproval)
	}
	return kinds
}
