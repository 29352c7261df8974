package ui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/internal/bigdag"
)

// What following a running 500-task run costs (issue 21: under 20 KB a second): chromium keeps
// the DAG page open while the daemon runs the run's tasks, and the server counts the bytes it
// sends (bodies as sent, gzipped when they are, and headers) during a window, by kind of
// request: the graph's states, the page's live refresh, and anything else.

// byteCounter wraps the server and counts what it sends while on.
type byteCounter struct {
	next http.Handler
	on   atomic.Bool
	mu   sync.Mutex
	by   map[string]*traffic
}

// traffic is what one kind of request cost: requests, 304s among them, and bytes sent.
type traffic struct{ requests, notModified, bytes int }

func (c *byteCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cw := &countingWriter{ResponseWriter: w}
	c.next.ServeHTTP(cw, r)
	if !c.on.Load() {
		return
	}
	kind := "other " + r.URL.Path
	switch {
	case strings.HasSuffix(r.URL.Path, "/states"):
		kind = "graph states"
	case r.Header.Get("X-Poolflow-Live") != "":
		kind = "page refresh"
	}
	status := cw.status
	if status == 0 {
		status = http.StatusOK
	}
	n := cw.n + len("HTTP/1.1 200 OK\r\n\r\n")
	for k, vs := range w.Header() {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]*traffic{}
	}
	tr := c.by[kind]
	if tr == nil {
		tr = &traffic{}
		c.by[kind] = tr
	}
	tr.requests++
	tr.bytes += n
	if status == http.StatusNotModified {
		tr.notModified++
	}
}

type countingWriter struct {
	http.ResponseWriter
	status, n int
}

func (w *countingWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += n
	return n, err
}

func (w *countingWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// liveCost is what a window of following cost.
type liveCost struct {
	window time.Duration
	by     map[string]traffic
	total  int
	moved  int // graph nodes whose state the page changed during the window
}

func (l liveCost) perSecond() float64 { return float64(l.total) / l.window.Seconds() }

func (l liveCost) String() string {
	kinds := make([]string, 0, len(l.by))
	for k := range l.by {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		tr := l.by[k]
		parts = append(parts, fmt.Sprintf("%s: %d requests (%d not modified) %s", k, tr.requests, tr.notModified, kb(tr.bytes)))
	}
	return fmt.Sprintf("%s in %s = %s/s; %d node states moved; %s", kb(l.total), l.window.Round(100*time.Millisecond),
		kb(int(l.perSecond())), l.moved, strings.Join(parts, "; "))
}

// followLiveRun triggers a run of a 500-task DAG whose tasks each take a moment, opens its
// DAG page in chromium once the run is under way, and counts the bytes sent during window.
func followLiveRun(t *testing.T, window time.Duration, path string) liveCost {
	t.Helper()
	b := setup(t, setupOpts{dags: []*dag.DAG{bigdag.Warehouse("warehouse_500", []string{"sleep", "0.2"})}})
	b.trigger(t, "warehouse_500", "live")
	b.waitAdmitted(t, "warehouse_500", "live", "start")
	counter := &byteCounter{next: b.srv}
	ts := httptest.NewServer(counter)
	t.Cleanup(ts.Close)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(ts.URL+path))
	waitFor(t, ctx, "the graph following the run", `document.querySelector("#graph-view[data-open='1'] svg.graph")`)
	const states = `[...document.querySelectorAll("svg.graph g.node")].map(g => g.dataset.state)`
	was := eval[[]string](t, ctx, states)
	counter.on.Store(true)
	start := time.Now()
	<-time.After(window) // a rate is measured over a period: the one wait here that is on the clock
	counter.on.Store(false)
	cost := liveCost{window: time.Since(start), by: map[string]traffic{}}
	is := eval[[]string](t, ctx, states)
	counter.mu.Lock()
	for k, tr := range counter.by {
		cost.by[k] = *tr
		cost.total += tr.bytes
	}
	counter.mu.Unlock()
	for i := range min(len(was), len(is)) {
		if was[i] != is[i] {
			cost.moved++
		}
	}
	shot(t, ctx, "live-500")
	return cost
}

// TestBrowserLiveBytes: following a running 500-task run on its DAG page, grouped and not,
// moves under 20 KB a second while its tasks' states change, and the page does follow them.
func TestBrowserLiveBytes(t *testing.T) {
	for _, path := range []string{"/ui/dags/warehouse_500", "/ui/dags/warehouse_500?groups=off"} {
		cost := followLiveRun(t, 8*time.Second, path)
		t.Logf("%s: %s", path, cost)
		if cost.moved == 0 {
			t.Errorf("%s: no node changed state in the window: %s", path, cost)
		}
		if cost.by["graph states"].requests == 0 {
			t.Errorf("%s: the graph did not read its states: %s", path, cost)
		}
		if cost.perSecond() > 20000 {
			t.Errorf("%s: %s a second, want under 20 KB: %s", path, kb(int(cost.perSecond())), cost)
		}
	}
}
