package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Notifications under chaos (§13): every DAG of the workload tells a webhook notifier of the
// harness when its runs succeed or fail, and its tasks when they retry. Events are written to
// the outbox in the transaction of the state change and delivered by any live daemon, at
// least once, so daemons killed with -9 mid-delivery must leave nothing undelivered. After the
// quiet period the harness checks, from the outbox (GET /api/v1/notifications) and what its
// receiver got: every event delivered and received at least once, and no occurrence produced
// twice (two idempotency keys for one event of one run, task and try).

// hookReceiver is the webhook receiver: it records every POST and answers 200.
type hookReceiver struct {
	srv *http.Server
	url string

	mu   sync.Mutex
	got  map[string]int // idempotency key -> deliveries
	seen map[string]map[string]bool
	runs map[string]string // occurrence -> "dag/run" of a run event ("" for a task's)
	n    int
	// lat is, for each key's first receipt, the time from the event's "at" (the state change,
	// written in its transaction) to the receipt: the delivery latency under chaos.
	lat []time.Duration
}

type hookBody struct {
	Event    string    `json:"event"`
	DAGID    string    `json:"dag_id"`
	DAGRunID string    `json:"dag_run_id"`
	TaskID   string    `json:"task_id"`
	Try      int       `json:"try_number"`
	At       time.Time `json:"at"`
}

func (b hookBody) occurrence() string {
	return fmt.Sprintf("%s %s/%s/%s#%d", b.Event, b.DAGID, b.DAGRunID, b.TaskID, b.Try)
}

func newHookReceiver() (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hookReceiver{url: "http://" + ln.Addr().String() + "/hook", got: map[string]int{}, seen: map[string]map[string]bool{},
		runs: map[string]string{}}
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var b hookBody
	_ = json.Unmarshal(data, &b)
	key := r.Header.Get("Idempotency-Key")
	now := time.Now()
	h.mu.Lock()
	if h.got[key] == 0 && !b.At.IsZero() && b.Event != "test" {
		h.lat = append(h.lat, now.Sub(b.At))
	}
	h.got[key]++
	h.n++
	occ := b.occurrence()
	if h.seen[occ] == nil {
		h.seen[occ] = map[string]bool{}
	}
	h.seen[occ][key] = true
	if b.TaskID == "" {
		h.runs[occ] = b.DAGID + "/" + b.DAGRunID
	}
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (h *hookReceiver) close() { _ = h.srv.Close() }

// notificationJSON is an outbox row as the API lists it.
type notificationJSON struct {
	Key      string              `json:"idempotency_key"`
	Event    string              `json:"event"`
	Notifier string              `json:"notifier"`
	DAGID    *string             `json:"dag_id"`
	RunID    *string             `json:"dag_run_id"`
	TaskID   *string             `json:"task_id"`
	Try      *int                `json:"try_number"`
	State    vocab.DeliveryState `json:"state"`
	Error    *string             `json:"last_error"`
}

func (n notificationJSON) occurrence() string {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	try := 0
	if n.Try != nil {
		try = *n.Try
	}
	return fmt.Sprintf("%s %s/%s/%s#%d", n.Event, s(n.DAGID), s(n.RunID), s(n.TaskID), try)
}

// outbox lists every notification of the store, page by page.
func (r *runner) outbox(addr string) ([]notificationJSON, error) {
	var all []notificationJSON
	for offset := 0; ; {
		var page struct {
			Rows  []notificationJSON `json:"notifications"`
			Total int                `json:"total_entries"`
		}
		if err := r.getJSON(addr, fmt.Sprintf("/api/v1/notifications?limit=100&offset=%d", offset), &page); err != nil {
			return nil, err
		}
		all = append(all, page.Rows...)
		offset += len(page.Rows)
		if len(page.Rows) == 0 || offset >= page.Total {
			return all, nil
		}
	}
}

// notifyResult is what the notification checks found.
type notifyResult struct {
	err         error
	rows        int             // outbox rows
	received    int             // POSTs the receiver got
	byEvent     map[string]int  // outbox rows by event
	undelivered []string        // rows not delivered (pending or failed), with their last error
	unreceived  []string        // rows delivered whose key the receiver never got
	twice       []string        // occurrences with more than one idempotency key
	resent      int             // keys received more than once (at least once: allowed)
	reended     int             // run events with a key per end of a run a repair reopened
	latency     []time.Duration // state change -> first receipt, sorted
}

func (n *notifyResult) violations() int {
	v := len(n.undelivered) + len(n.unreceived) + len(n.twice)
	if n.err != nil {
		v++
	}
	return v
}

// checkNotifications waits (up to wait) for the outbox to have nothing left to send, then
// compares it with what the receiver got.
func (h *harness) checkNotifications(addr string, wait time.Duration) *notifyResult {
	res := &notifyResult{byEvent: map[string]int{}}
	if addr == "" || h.hook == nil {
		res.err = fmt.Errorf("no daemon to read the outbox from")
		return res
	}
	var rows []notificationJSON
	deadline := time.Now().Add(wait)
	for {
		var err error
		if rows, err = h.r.outbox(addr); err != nil {
			res.err = err
			return res
		}
		pending := 0
		for _, n := range rows {
			if n.State == vocab.DeliveryPending || n.State == vocab.DeliverySending {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond) // other processes deliver: nothing to wait on
	}
	h.hook.mu.Lock()
	defer h.hook.mu.Unlock()
	res.rows, res.received = len(rows), h.hook.n
	res.latency = append([]time.Duration(nil), h.hook.lat...)
	sort.Slice(res.latency, func(i, j int) bool { return res.latency[i] < res.latency[j] })
	keys := map[string][]string{} // occurrence -> keys of the outbox
	allowed := map[string]int{}   // occurrence -> keys it may have: a run event once per end
	h.mu.Lock()
	ends := func(run string) int { return 1 + h.repairs[run] }
	for occ, run := range h.hook.runs {
		allowed[occ] = ends(run)
	}
	for _, n := range rows {
		res.byEvent[n.Event]++
		occ := n.occurrence() + " -> " + n.Notifier
		keys[occ] = append(keys[occ], n.Key)
		if n.TaskID == nil || *n.TaskID == "" {
			allowed[occ] = ends(*n.DAGID + "/" + *n.RunID)
		}
		switch {
		case n.State != vocab.DeliveryDelivered:
			why := ""
			if n.Error != nil {
				why = ": " + *n.Error
			}
			res.undelivered = append(res.undelivered, fmt.Sprintf("%s is %s%s", occ, n.State, why))
		case h.hook.got[n.Key] == 0:
			res.unreceived = append(res.unreceived, occ+" (key "+n.Key+")")
		}
	}
	h.mu.Unlock()
	// A run that a clear or mark reopened ends again: each end is its own occurrence, so a run
	// event may have one key per end (1 + the repairs of the run that were not refused).
	for occ, ks := range keys {
		if len(ks) > max(allowed[occ], 1) {
			res.twice = append(res.twice, fmt.Sprintf("%s: %d keys", occ, len(ks)))
		} else if len(ks) > 1 {
			res.reended++
		}
	}
	for occ, ks := range h.hook.seen {
		if len(ks) > max(allowed[occ], 1) && !strings.HasPrefix(occ, "test ") {
			res.twice = append(res.twice, fmt.Sprintf("%s: received with %d keys", occ, len(ks)))
		}
	}
	for _, c := range h.hook.got {
		if c > 1 {
			res.resent++
		}
	}
	sort.Strings(res.undelivered)
	sort.Strings(res.unreceived)
	sort.Strings(res.twice)
	return res
}

// reportNotifications prints the notification checks.
func reportNotifications(pf func(string, ...any), n *notifyResult) {
	verdict := func(n int) string {
		if n == 0 {
			return "ok"
		}
		return "VIOLATION"
	}
	pf("\n-- notifications (webhook on every DAG's run success and failure and task retries) --\n")
	if n.err != nil {
		pf("  outbox unreadable: %v  VIOLATION\n", n.err)
		return
	}
	var evs []string
	for e, c := range n.byEvent {
		evs = append(evs, fmt.Sprintf("%s %d", e, c))
	}
	sort.Strings(evs)
	pf("  events in the outbox: %d (%s); POSTs received: %d; keys received more than once: %d (at least once: allowed)\n",
		n.rows, strings.Join(evs, ", "), n.received, n.resent)
	if l := n.latency; len(l) > 0 {
		q := func(f float64) time.Duration { return l[int(f*float64(len(l)-1))].Round(time.Millisecond) }
		pf("  delivery latency (state change -> first receipt): median %s, p90 %s, p99 %s, max %s over %d events\n",
			q(0.5), q(0.9), q(0.99), q(1), len(l))
	}
	pf("  events not delivered after the quiet period: %d  %s\n", len(n.undelivered), verdict(len(n.undelivered)))
	pf("  events delivered but never received: %d  %s\n", len(n.unreceived), verdict(len(n.unreceived)))
	pf("  run events of runs a clear or mark reopened, one key per end: %d\n", n.reended)
	pf("  events produced twice (two idempotency keys for one occurrence): %d  %s\n", len(n.twice), verdict(len(n.twice)))
	for _, list := range [][]string{n.undelivered, n.unreceived, n.twice} {
		for i, s := range list {
			if i == 5 {
				pf("    … and %d more\n", len(list)-5)
				break
			}
			pf("    %s\n", s)
		}
	}
}
