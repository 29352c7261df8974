package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Message is an event in words, for people: a Slack message and an e-mail say the same facts
// as the webhook's JSON.
func Message(ev Event) (subject, body string) {
	what := ev.DAGID
	if ev.TaskID != "" {
		what += "." + ev.TaskID
	}
	switch ev.Event {
	case vocab.EventRunFailed:
		subject = fmt.Sprintf("run %s of %s failed", ev.DAGRunID, ev.DAGID)
	case vocab.EventRunSucceeded:
		subject = fmt.Sprintf("run %s of %s succeeded", ev.DAGRunID, ev.DAGID)
	case vocab.EventTaskFailed:
		subject = fmt.Sprintf("%s failed (try %d)", what, ev.TryNumber)
	case vocab.EventTaskSucceeded:
		subject = fmt.Sprintf("%s succeeded (try %d)", what, ev.TryNumber)
	case vocab.EventTaskRetry:
		subject = fmt.Sprintf("%s failed try %d and will retry", what, ev.TryNumber)
	case vocab.EventQueueWait:
		subject = fmt.Sprintf("%s is still waiting for admission", what)
		if ev.Wait != nil {
			subject = fmt.Sprintf("%s has waited %s for admission", what, Minutes(time.Duration(ev.Wait.Seconds)*time.Second))
		}
	case vocab.EventDeadlineMiss:
		subject = fmt.Sprintf("run %s of %s missed its deadline", ev.DAGRunID, ev.DAGID)
	case vocab.EventTest:
		subject = "test notification from poolflow"
	default:
		subject = string(ev.Event) + ": " + what
	}
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	line("reason", ev.Reason)
	line("dag", ev.DAGID)
	line("run", ev.DAGRunID)
	line("task", ev.TaskID)
	if ev.TryNumber > 0 {
		line("try", fmt.Sprint(ev.TryNumber))
	}
	line("state", ev.State)
	if !ev.LogicalDate.IsZero() {
		line("logical date", ev.LogicalDate.UTC().Format(time.RFC3339))
	}
	if ev.Deadline != nil {
		line("deadline", ev.Deadline.UTC().Format(time.RFC3339))
	}
	line("at", ev.At.UTC().Format(time.RFC3339))
	line("link", ev.URL)
	return subject, b.String()
}

// Minutes says a wait the way a person would: "35 min", "2 h 5 min", "40 s".
func Minutes(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// Ordinal is 1st, 2nd, 3rd, 4th … 11th, 12th, 13th, 21st …
func Ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
