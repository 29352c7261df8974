package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Event is what a notifier sends: a webhook's JSON body, the facts of a Slack message or an
// e-mail, a command's stdin. Its fields are the documented schema (§13; README).
type Event struct {
	// Event is run_failed, run_succeeded, task_failed, task_succeeded, task_retry,
	// queue_wait, deadline_miss, or test (a sample).
	Event    vocab.NotifyEvent `json:"event"`
	DAGID    string            `json:"dag_id"`
	DAGRunID string            `json:"dag_run_id"`
	// TaskID is "" for a run's events; MapIndex is -1 (poolflow has no mapped tasks yet).
	TaskID    string `json:"task_id"`
	MapIndex  int    `json:"map_index"`
	TryNumber int    `json:"try_number"`
	// State is the task instance's or the run's state after the change (a queue wait: the
	// task's, scheduled); Reason says why in words.
	State       string    `json:"state"`
	Reason      string    `json:"reason"`
	LogicalDate time.Time `json:"logical_date"`
	// URL is the run's or the task's page in the UI.
	URL string `json:"url"`
	// At is when the change happened.
	At time.Time `json:"at"`
	// Notifier and IdempotencyKey repeat the delivery's (the Idempotency-Key header).
	Notifier       string `json:"notifier"`
	IdempotencyKey string `json:"idempotency_key"`
	// Wait is a queue wait's: how long the entry has waited and for which pool.
	Wait *Wait `json:"wait,omitempty"`
	// Deadline is a deadline miss's deadline.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Path is URL's path, kept in the outbox: the sender puts its base URL before it.
	Path string `json:"-"`
}

// Wait describes a queue wait.
type Wait struct {
	QueueID int64         `json:"queue_id"`
	Waited  time.Duration `json:"-"`
	Seconds int64         `json:"waited_seconds"`
	Pool    string        `json:"pool,omitempty"`
	// Place is the entry's place in Pool's line when it was sent (1 = next), when the
	// admission walk can tell (§13: "3rd in line for warehouse"); 0 when it cannot.
	Place int `json:"place,omitempty"`
}

// stored is an Event as the outbox keeps it (with its path).
type stored struct {
	Event
	Path string `json:"path"`
}

// Key is the idempotency key of one occurrence of an event for one notifier: the same inputs
// give the same key, so the store drops an occurrence produced twice.
func Key(ev vocab.NotifyEvent, dagID, runID, taskID string, try int, occurrence, notifier string) string {
	h := sha256.Sum256([]byte(strings.Join([]string{string(ev), dagID, runID, taskID, fmt.Sprint(try), occurrence, notifier}, "\x00")))
	return hex.EncodeToString(h[:16])
}

// Row is the outbox row of ev for notifier, whose occurrence (the attempt's end, the run's
// end, the entry's id…) tells it apart from other occurrences of the same event.
func Row(ev Event, notifier, occurrence string) *store.Notification {
	ev.Notifier = notifier
	ev.IdempotencyKey = Key(ev.Event, ev.DAGID, ev.DAGRunID, ev.TaskID, ev.TryNumber, occurrence, notifier)
	if ev.MapIndex == 0 {
		ev.MapIndex = -1
	}
	if ev.Wait != nil {
		ev.Wait.Seconds = int64(ev.Wait.Waited / time.Second)
	}
	b, _ := json.Marshal(stored{Event: ev, Path: ev.Path})
	return &store.Notification{Key: ev.IdempotencyKey, Event: ev.Event, Notifier: notifier, DAGID: ev.DAGID,
		RunID: ev.DAGRunID, TaskID: ev.TaskID, Try: ev.TryNumber, Payload: string(b), CreatedAt: ev.At}
}

// Decode reads an outbox row's event and points its URL at base (the UI's address).
func Decode(n store.Notification, base string) (Event, error) {
	var s stored
	if err := json.Unmarshal([]byte(n.Payload), &s); err != nil {
		return Event{}, fmt.Errorf("notification %d: %w", n.ID, err)
	}
	ev := s.Event
	ev.Path = s.Path
	if ev.Path != "" {
		ev.URL = strings.TrimRight(base, "/") + ev.Path
	}
	return ev, nil
}

// RunPath and TaskPath are the UI's pages of a run and of a task instance.
func RunPath(dagID, runID string) string {
	return "/ui/dags/" + url.PathEscape(dagID) + "/runs/" + url.PathEscape(runID)
}

func TaskPath(dagID, runID, taskID string) string {
	return RunPath(dagID, runID) + "/tasks/" + url.PathEscape(taskID)
}
