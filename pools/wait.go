package pools

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Wait is why something waits, or how a queue entry ended: a stable code and the words the
// API, the UI and `poolflow tasks explain` all show.
type Wait struct {
	Code vocab.ReasonCode
	Text string
}

// EntryWait is why a queue entry waits (a waiting entry's reason, computed on read by the full
// walk, §4.5) or how it ended (a terminal entry's), from its stored or computed code and words;
// false when it has neither. An entry whose reason has words but no code waits for a reason not
// known yet (code waiting).
func EntryWait(code vocab.ReasonCode, text string) (Wait, bool) {
	if code == "" && text == "" {
		return Wait{}, false
	}
	if code == "" {
		code = vocab.ReasonWaiting
	}
	return Wait{Code: code, Text: code.Say(text)}, true
}

// TaskWait is what tells why a task instance waits: its own state and reason, its run's, and its
// newest queue entry's.
type TaskWait struct {
	State  vocab.TaskState
	NextAt time.Time // up_for_retry, up_for_reschedule: when it is due again
	// ReasonCode and Reason are the task instance's (before a retry: why the last try failed).
	ReasonCode vocab.ReasonCode
	Reason     string
	// RunState and RunReason are its run's: a queued run says why it has not started.
	RunState  vocab.RunState
	RunReason string
	// Entry is its newest queue entry's state ("" for none); EntryCode and EntryText why that
	// entry waits, as the full walk says it (read it with the entry, e.g. executor.Explain).
	Entry     vocab.EntryState
	EntryCode vocab.ReasonCode
	EntryText string
	// Line is the mapped task whose line a mapped instance waits in (reason code map_line,
	// §14), and Ahead how many instances of the line are before it.
	Line  string
	Ahead int
}

// WhyWaiting says why a task instance waits: a scheduled task's entry's reason from the
// admission walk when it has one, else what it waits for outside the pools (its run to start,
// the next admission pass, its upstream tasks, its retry time, a sensor's next poke, a person's
// decision). False when the task instance does not wait: it runs or has ended.
func WhyWaiting(w TaskWait) (Wait, bool) {
	runQueued := Wait{Code: vocab.ReasonRunQueued,
		Text: "waiting: the run has not started (max_active_runs reached, or no daemon has taken it yet)"}
	if w.RunReason != "" {
		runQueued.Text = "waiting: the run has not started (" + w.RunReason + ")"
	}
	switch w.State {
	case vocab.TaskScheduled:
		if w.Entry == vocab.EntryWaiting {
			if r, ok := EntryWait(w.EntryCode, w.EntryText); ok {
				return r, true
			}
		}
		if w.RunState == vocab.RunQueued {
			return runQueued, true
		}
		return Wait{Code: vocab.ReasonQueued, Text: "waiting: queued for the next admission pass"}, true
	case vocab.TaskNone:
		if w.RunState == vocab.RunQueued {
			return runQueued, true
		}
		if w.ReasonCode == vocab.ReasonMapLine {
			return Wait{Code: vocab.ReasonMapLine, Text: fmt.Sprintf("waiting: for a place in %s's queue window (%s ahead in its line)",
				w.Line, instances(w.Ahead))}, true
		}
		return Wait{Code: vocab.ReasonUpstream, Text: "waiting: upstream tasks have not finished"}, true
	case vocab.TaskUpForRetry:
		after := w.ReasonCode.Say(w.Reason)
		if after == "" {
			after = "a failed attempt"
		}
		return Wait{Code: vocab.ReasonRetry, Text: "waiting: retry at " + fmtTime(w.NextAt) + " after " + after}, true
	case vocab.TaskUpForReschedule:
		return Wait{Code: vocab.ReasonReschedule, Text: "waiting: sensor pokes again at " + fmtTime(w.NextAt)}, true
	case vocab.TaskAwaitingApproval:
		return Wait{Code: vocab.ReasonApproval, Text: "waiting: for a person to approve or reject"}, true
	}
	return Wait{}, false
}

// fmtTime is a time in a reason: RFC 3339 in UTC, "-" for none.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// instances says a count of mapped instances, with thousands separated: "9,992 instances".
func instances(n int) string {
	if n == 1 {
		return "1 instance"
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " instances"
}
